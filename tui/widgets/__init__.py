"""The app's panels, one a module; the app sets their data, each renders itself."""
