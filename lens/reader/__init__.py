"""The folder as lens reads it: which files are documents, how each format becomes units of text that carry where
they came from (a page, a slide, a row), and where a file that cannot be read is skipped with its reason."""
