"""Exit status of the ``sdc`` commands (the epilog of ``sdc --help`` lists them)."""

EXIT_OK = 0
#: A step of the run failed for a reason other than the spec or the data (the message says which).
EXIT_RUN_FAILED = 1
#: Wrong command line: unknown survey, a spec that exists already (argparse uses 2 too).
EXIT_USAGE = 2
#: The run completed but a blocking release check failed: that variant is withheld.
EXIT_WITHHELD = 3
#: The survey spec is wrong (the message names the file, the line and the key).
EXIT_BAD_SPEC = 4
#: The data file is wrong or unreadable (the message names the column, the rule and the rows).
EXIT_BAD_DATA = 5
