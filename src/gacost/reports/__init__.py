"""One module per report; each renders text, JSON and CSV from the same data."""
