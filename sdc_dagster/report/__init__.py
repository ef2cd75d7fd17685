"""The self-contained HTML release report and its plots."""
