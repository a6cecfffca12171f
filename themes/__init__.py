"""rigcheck's colour themes for the Textual app."""
