"""Models shared by stages: one definition used by both Verify and the training benchmark."""
