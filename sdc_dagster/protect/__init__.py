"""Protection (SDC) methods (SPEC §8, §11). Public names follow ../CONTRACT.md."""
