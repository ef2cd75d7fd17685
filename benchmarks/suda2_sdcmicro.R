# sdcMicro's suda2 on the data of `benchmarks/protect.py --issue37` (issue 37's "SUDA2 at least 20x
# faster than sdcMicro's suda2 in the same run"). Our code: the calls only. sdcMicro itself (5.8.1,
# GPL-2 / LGPL-2.1) is not in this repository: the loader named by SDCMICRO_LOADER (default
# /work/rlib/load.R) sources its R/suda2.R and compiles its src/Suda2.h.
#
#   Rscript benchmarks/suda2_sdcmicro.R DATA.csv KEY1,KEY2,... OUT.json SCORES.csv
#
# DATA.csv: the keys as integer codes (header line). Times, in CPU (user + system of the R process)
# and elapsed seconds:
#   - suda2(data, variables = KEYS, DisFraction = 0.01), the call an sdcMicro user writes (missing
#     = -999 and original_scores = TRUE by default), which includes its R-level attribute and
#     attribute-level contributions;
#   - the C++ core alone (.Call("Suda2", ...) in sdcMicro, Suda2_cpp here) on the matrix suda2
#     builds, as issue 16 timed it.
# OUT.json: those seconds. SCORES.csv: suda2's score and disScore per record (for the agreement).
suppressPackageStartupMessages({library(jsonlite); library(data.table)})
args <- commandArgs(trailingOnly = TRUE)
stopifnot(length(args) == 4)
source(Sys.getenv("SDCMICRO_LOADER", "/work/rlib/load.R"))
data <- as.data.frame(fread(args[1]))
keys <- strsplit(args[2], ",", fixed = TRUE)[[1]]

seconds <- function(expr) {
  start <- proc.time()
  value <- force(expr)
  used <- proc.time() - start
  list(value = value, cpu = used[["user.self"]] + used[["sys.self"]], elapsed = used[["elapsed"]])
}

whole <- seconds(suda2(data, variables = keys, DisFraction = 0.01))
matrix_x <- as.matrix(data[, keys, drop = FALSE])
storage.mode(matrix_x) <- "double"
core <- seconds(Suda2_cpp(matrix_x, -999, ncol(matrix_x), 0.01, TRUE))
fwrite(data.frame(score = whole$value$score, disScore = whole$value$disScore), args[4])
write_json(list(n = nrow(data), keys = keys,
                suda2_cpu = whole$cpu, suda2_elapsed = whole$elapsed,
                core_cpu = core$cpu, core_elapsed = core$elapsed),
           args[3], auto_unbox = TRUE, digits = NA)
