"""The paper's analyses, one module per table or figure, and the claims ledger that tests each finding."""
