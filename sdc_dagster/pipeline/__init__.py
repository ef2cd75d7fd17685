"""The survey and grid pipelines: one module per stage of a wave's (or a region's) chain."""
