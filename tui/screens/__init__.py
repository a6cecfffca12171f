"""The app's screens beyond the main one: the quit question, history and the side-by-side comparison."""
