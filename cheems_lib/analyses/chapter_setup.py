"""A chapter's first cell: check its parameters, open its data, start its claims ledger.

Every chapter begins the same way, so the lines live here, once::

    world, ledger = open_chapter("scaling", globals())

:func:`open_chapter` refuses a parameter value that the chapter's parameters cell does not allow
(:func:`cheems_lib.publishing.chapters.check_parameters`; a plain papermill run refuses what ``cheems book``
refuses), opens the world folder or the simulated world
(:func:`cheems_lib.analyses.world_folder.open_world`), shows the world's conditions to the book
(:func:`cheems_lib.publishing.publish.show_conditions`), starts the chapter's
:class:`cheems_lib.analyses.claims.Ledger` and makes its source the source of every download
(:func:`use_source`), and glues ``source``, the words the prose uses for the data.

The chapter's parameters are read by their names: ``world_dir``, ``human_ids``; ``size`` and ``seed`` pick
the simulated world only in a chapter that declares ``size`` (a chapter without it reads a folder); a
chapter that declares ``train_seeds`` labels its numbers with those training seeds.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..publishing import publish
from ..publishing.chapters import check_parameters
from . import claims, world_folder

__all__ = ["open_chapter", "use_source"]


def use_source(ledger: claims.Ledger, source: str) -> claims.Ledger:
    """Label the claims in ``ledger`` and every download of the chapter with ``source`` (a provenance string,
    e.g. ``world.source``); returns ``ledger``."""
    ledger.source = source
    publish.set_source(source)
    return ledger


def open_chapter(name: str, namespace: Mapping[str, Any], *, world: bool = True
                 ) -> tuple[world_folder.World | None, claims.Ledger | None]:
    """``(world, ledger)`` of chapter ``name`` run with the parameters in ``namespace`` (its ``globals()``).

    Parameters
    ----------
    name
        The chapter, as in ``notebooks/<name>.md``.
    namespace
        The kernel's globals after the parameters cell (papermill's injected values included).
    world
        False for a chapter without data of its own (the claims page, the reproduction checklist): the
        parameters are checked and ``(None, None)`` is returned.

    Raises
    ------
    cheems_lib.publishing.chapters.BookInputError
        One line naming the parameter, its value, what it allows and the fix.

    Examples
    --------
    >>> world, ledger = open_chapter("conflicts", globals())  # doctest: +SKIP
    >>> ledger.chapter, world.label  # doctest: +SKIP
    ('conflicts', 'the simulated world (size default, seed 0)')
    """
    check_parameters(name, namespace)
    if not world:
        return None, None
    simulate = {"size": namespace["size"], "seed": namespace.get("seed", 0)} if "size" in namespace else {}
    opened = world_folder.open_world(namespace.get("world_dir", ""), human_ids=namespace.get("human_ids", ""),
                                    **simulate)
    publish.show_conditions(opened.conditions)
    seeds = namespace.get("train_seeds")
    ledger = claims.Ledger(name, opened.source if seeds is None else opened.trained_source(range(seeds)))
    use_source(ledger, ledger.source)
    publish.glue_values({"source": opened.label})
    return opened, ledger
