"""One process of the FSDP2-on-the-CPU test (tests/test_training_fsdp.py), started by torch.distributed.run.

accelerate drives FSDP only on CUDA, so this builds what it would: a tiny model sharded with ``fully_shard`` over a
gloo group, and an accelerator stand-in with the few methods the training step calls. Then it runs the trainer's
own step (:func:`cheems_lib.models.training._optimisation_step`) over a global-batch plan, gathers the full state
dict and, on rank 0, saves it with the trainer's own writer (:func:`cheems_lib.models.run_folder.save_model`).

Usage: ``python -m torch.distributed.run --nproc_per_node N tests/fsdp_worker.py DATA.jsonl OUT`` (N = 1 runs
the same plan without FSDP, the reference).
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

class CpuAccelerator:
    """What ``_optimisation_step`` asks of accelerate, for a process group accelerate does not manage."""

    def __init__(self, rank: int, world: int):
        import torch

        self.process_index, self.num_processes, self.device = rank, world, torch.device("cpu")
        self.no_sync_calls = 0

    def no_sync(self, model):
        self.no_sync_calls += 1
        return contextlib.nullcontext()

    def backward(self, loss):
        loss.backward()

    def reduce(self, tensor, op):
        import torch.distributed as dist

        if self.num_processes > 1:
            dist.all_reduce(tensor)
        return tensor

    def clip_grad_norm_(self, params, max_norm):
        import torch

        return torch.nn.utils.clip_grad_norm_(list(params), max_norm)


def main(data_path: str, out: str) -> None:
    import torch
    import torch.distributed as dist

    from cheems_lib.models.batching import forward_options
    from cheems_lib.models.reward_model import build_tiny, train_tokenizer
    from cheems_lib.models.run_folder import save_model
    from cheems_lib.models.training_steps import plan_epoch as _epoch_steps
    from cheems_lib.models.training import _optimisation_step, _Run
    from cheems_lib.models.training_config import TrainConfig
    from cheems_lib.models.training_pairs import encode_records
    from cheems_lib.records import read_records

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    records = read_records(data_path)
    cfg = TrainConfig(model="tiny-xs", max_length=128, max_tokens_per_batch=1536, global_batch=24, tokenizer_vocab=500,
                      learning_rate=1e-3, warmup_ratio=0.0, epochs=1)
    tok = train_tokenizer((t for r in records for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=500)
    data = encode_records(records, tok, cfg.max_length)
    model = build_tiny(cfg.model, tok, seed=0, max_length=cfg.max_length)
    model.train()
    forwards = [0]
    model.register_forward_pre_hook(lambda *_: forwards.__setitem__(0, forwards[0] + 1))
    if world > 1:
        from torch.distributed.fsdp import fully_shard

        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    accelerator = CpuAccelerator(rank, world)
    steps = _epoch_steps(data, cfg, 0, world)
    run = _Run(accelerator, cfg, model, tok, optimizer, scheduler, data, [steps], world > 1, forward_options(model),
               tok.pad_token_id, forwards)
    log = []
    for per_proc in steps:
        metrics = _optimisation_step(run, per_proc)
        log.append({"pairs": metrics.pairs, "loss": metrics.pair_loss / max(metrics.pairs, 1),
                    "forwards": list(metrics.per_process_forwards),
                    "micro_batches": [len(group) for group in per_proc]})
    if world > 1:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    else:
        state = model.state_dict()
    if rank == 0:
        save_model(model, dict(state), Path(out), "float32")
        tok.save_pretrained(out)
        (Path(out) / "log.json").write_text(json.dumps({"steps": log, "no_sync_calls": accelerator.no_sync_calls}))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:3])
