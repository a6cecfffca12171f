"""The verify stage: every dtype, the board network and memory scored against float64."""
