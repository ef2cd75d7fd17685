"""Protection of published tables (tau-Argus / sdcTable class): public names follow CONTRACT.md."""
