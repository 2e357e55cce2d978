"""The paper's analyses, one module per table, figure or finding, the claims ledger that tests each finding, and
what the chapters share: opening a chapter's world (``chapter_setup``, ``world_folder``) and its training sets
(``experiments``)."""
