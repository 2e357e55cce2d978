"""Training steps: an epoch's prompts grouped into optimisation steps and spread over the processes."""
from __future__ import annotations


class TestGlobalBatchSteps:
    """global_batch_steps: whole prompts, the global batch on average, the same plan for any number of processes."""

    LENGTHS = [[7] * k for k in (2, 5, 3, 8, 1, 4, 6, 2, 3, 9, 5, 4, 7, 2, 3) * 4]

    def test_each_prompt_once_and_steps_within_one_prompt(self):
        """Every prompt is in exactly one micro-batch; step k closes where the running count first reaches k x N,
        so the steps average N sequences and each is within one prompt of N (the last may be short)."""
        from cheems_lib.models.training_steps import global_batch_steps

        steps = global_batch_steps(self.LENGTHS, 16, 60, 3, seed=1)
        seen = [i for s in steps for p in s for b in p for i in b.prompts]
        assert sorted(seen) == list(range(len(self.LENGTHS)))
        sizes = [sum(b.n_sequences for p in s for b in p) for s in steps]
        longest = max(map(len, self.LENGTHS))
        assert all(abs(n - 16) < longest for n in sizes[:-1]) and sum(sizes) == sum(map(len, self.LENGTHS))
        assert abs(sum(sizes[:-1]) / (len(sizes) - 1) - 16) < 2

    def test_processes_do_not_change_the_steps(self):
        """1, 2 and 3 processes get the same steps and micro-batches, only spread differently."""
        from cheems_lib.models.training_steps import global_batch_steps

        def flat(n):
            return [sorted(tuple(b.prompts) for p in s for b in p) for s in global_batch_steps(self.LENGTHS, 16, 60, n, seed=4)]
        assert flat(1) == flat(2) == flat(3)

    def test_micro_batches_go_to_the_least_loaded_process(self):
        """Largest first to the process with the fewest tokens: no process holds more than the largest micro-batch
        above another."""
        from cheems_lib.models.training_steps import global_batch_steps

        for s in global_batch_steps(self.LENGTHS, 30, 60, 2, seed=0):
            loads = [sum(b.tokens for b in p) for p in s]
            assert max(loads) - min(loads) <= max(b.tokens for p in s for b in p)
