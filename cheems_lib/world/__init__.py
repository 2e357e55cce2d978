"""The simulated Cheems world: Chinese prompts and responses, their hidden quality, the human and GPT-4o
annotators, the comparator models and Best-of-N sampling. Never imports the analyses or the book machinery."""
