"""The burn stage: sustained matrix products on every GPU at once, checked and watched."""
