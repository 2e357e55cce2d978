"""The book's machinery: the chapter registry, executing chapters with papermill, building the book, and the
pages' tables, figures and provenance."""
