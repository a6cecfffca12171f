"""rigcheck's front ends: the command line and the Textual app, both thin views over the engine."""
