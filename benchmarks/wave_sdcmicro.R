# sdcMicro doing what `benchmarks/wave.py`'s chain does with sdc-dagster's engine (issue 38's "10x
# sdcMicro" column). Our code: the calls only. sdcMicro itself (5.8.1, GPL-2) is not in this
# repository: the loader named by SDCMICRO_LOADER (default /work/rlib/load_wave.R) sources it.
#
#   Rscript benchmarks/wave_sdcmicro.R WAVE.csv PLANS.json OUT.json
#
# WAVE.csv: the wave file the benchmark wrote (missing values empty). PLANS.json (written by wave.py):
# {"keys": [...], "numeric": [...], "weight": "...", "household": "...", "k": 3,
#  "max_global_risk": 0.01, "linkage_max_records": 0, "plans": {"name": [step, ...]}, "seeds": {...},
#  "our_variants": {...}}, the steps
# as the spec and the run's manifest record them (method local_suppression, microaggregation, recode,
# pram), and "our_variants" (plan -> CSV of our chain's protected file, for the agreement figures,
# not timed). For the original file and each plan's variant it times, as an sdcMicro user would write
# them:
#   - the plan's steps: localSuppression(k, default importance); microaggregation(method = "mdav",
#     aggr = k, strata_variables); a recode as plain R (`x[x %in% from] <- to`); pram with the
#     transition matrix of the spec's retention (diagonal r, the rest split equally) and the plan's
#     seed;
#   - the risk measures: measure_risk (weights, household risk), k-anonymity violations (fk < k);
#   - the linkage risk: recordLinkage (Euclidean, one-to-one assignment) on the continuous keys when
#     n <= linkage_max_records (its n x n distance matrix and O(n^3) assignment do not fit beyond),
#     otherwise dRisk (interval disclosure, sdcMicro's linkage-type risk for continuous keys);
#   - the information loss: dUtility IL1s and the changes of the continuous keys' means, variances
#     and correlations (base R, as a user computes the chain's utility limits).
# OUT.json: seconds (elapsed and CPU) per step, the totals, and the figures to compare with the
# chain's (suppressions per key, global risk, fk < k, linkage).
suppressPackageStartupMessages(library(jsonlite))
args <- commandArgs(trailingOnly = TRUE)
stopifnot(length(args) == 3)
loader <- Sys.getenv("SDCMICRO_LOADER", "/work/rlib/load_wave.R")
load_started <- proc.time()
source(loader)
load_time <- proc.time() - load_started

cfg <- fromJSON(args[2], simplifyVector = FALSE)
keys <- unlist(cfg$keys)
numeric_keys <- unlist(cfg$numeric)
timings <- list()
figures <- list()

timed <- function(plan, step, expr) {
  started <- proc.time()
  value <- force(expr)
  used <- proc.time() - started
  cpu <- sum(used[c("user.self", "sys.self", "user.child", "sys.child")], na.rm = TRUE)
  timings[[length(timings) + 1]] <<- list(plan = plan, step = step, elapsed = used[["elapsed"]], cpu = cpu)
  cat(sprintf("%8.2f s  %-16s %s\n", used[["elapsed"]], plan, step))
  value
}

wave <- timed("(input)", "read wave file (data.table::fread)",
              as.data.frame(data.table::fread(args[1], na.strings = c("", "NA"))))

apply_step <- function(data, step, seed) {
  method <- step$method
  if (method == "local_suppression") {
    res <- localSuppression(data[, keys], k = step$k, keyVars = keys)
    data[, keys] <- res$xAnon[, keys]
    attr(data, "supps") <- as.list(res$supps)
  } else if (method == "microaggregation") {
    strata <- if (is.null(step$strata)) NULL else unlist(step$strata)
    columns <- unlist(step$columns)
    res <- microaggregation(data[, c(columns, strata)], variables = columns, aggr = step$k,
                            strata_variables = strata, method = "mdav")
    data[, columns] <- res$mx[, columns]
  } else if (method == "recode") {
    mapping <- step$mapping
    column <- data[[step$variable]]
    recoded <- column
    for (from in names(mapping)) recoded[column %in% as.numeric(from)] <- mapping[[from]]
    data[[step$variable]] <- recoded
  } else if (method == "pram") {
    v <- step$variable
    levs <- as.character(sort(unique(na.omit(data[[v]]))))
    L <- length(levs)
    r <- step$retention
    mat <- matrix((1 - r) / (L - 1), L, L, dimnames = list(levs, levs))
    diag(mat) <- r
    if (!is.null(seed)) set.seed(seed)
    inp <- data.frame(x = factor(data[[v]], levels = levs))
    names(inp) <- v
    res <- pram(inp, variables = v, pd = mat)
    data[[v]] <- as.numeric(as.character(res[[paste0(v, "_pram")]]))
  } else {
    stop(sprintf("wave_sdcmicro.R: step method %s has no sdcMicro call here", method))
  }
  data
}

measures <- function(name, original, variant) {
  risk <- timed(name, "measure_risk (weights, households)",
                measure_risk(variant, keyVars = keys, w = cfg$weight, hid = cfg$household,
                             max_global_risk = cfg$max_global_risk))
  out <- list(global_risk = risk$global_risk, household_risk = risk$hier_risk,
              k_violations = sum(risk$Res[, "fk"] < cfg$k))
  if (!identical(variant, original)) {
    x <- original[, numeric_keys]
    xm <- variant[, numeric_keys]
    if (nrow(x) <= cfg$linkage_max_records) {
      link <- timed(name, "recordLinkage (euclidean, one-to-one)",
                    recordLinkage(x, xm, vars = numeric_keys, distance = "euclidean"))
      out$record_linkage_rate <- link$correct_match_rate
    }
    out$dRisk <- timed(name, "dRisk (interval disclosure)", dRisk(x, xm))
    out$IL1s <- timed(name, "dUtility IL1s", dUtility(x, xm, method = "IL1s"))
    out$utility <- timed(name, "mean / variance / correlation changes", list(
      mean = (colMeans(xm) - colMeans(x)) / colMeans(x),
      variance = (apply(xm, 2, var) - apply(x, 2, var)) / apply(x, 2, var),
      correlation = (cor(xm) - cor(x))[upper.tri(cor(x))]))
  }
  out
}

figures[["(original)"]] <- measures("(original)", wave, wave)
variants <- list()
for (plan in names(cfg$plans)) {
  data <- wave
  seed <- cfg$seeds[[plan]]
  supps <- NULL
  for (i in seq_along(cfg$plans[[plan]])) {
    step <- cfg$plans[[plan]][[i]]
    data <- timed(plan, sprintf("step %d: %s", i - 1, step$method), apply_step(data, step, seed))
    if (!is.null(attr(data, "supps"))) supps <- attr(data, "supps")
  }
  figures[[plan]] <- c(measures(plan, wave, data), list(suppressions = supps))
  variants[[plan]] <- data
}

# agreement, not timed: sdcMicro's measure_risk on our chain's own variants (config$our_variants:
# plan -> CSV of our protected file), to compare with the global risk our chain reports for them
for (plan in names(cfg$our_variants)) {
  ours <- as.data.frame(data.table::fread(cfg$our_variants[[plan]], na.strings = c("", "NA")))
  risk <- measure_risk(ours, keyVars = keys, w = cfg$weight, hid = cfg$household,
                       max_global_risk = cfg$max_global_risk)
  figures[[plan]]$on_ours <- list(global_risk = risk$global_risk, household_risk = risk$hier_risk,
                                  k_violations = sum(risk$Res[, "fk"] < cfg$k),
                                  dRisk = dRisk(wave[, numeric_keys], ours[, numeric_keys]),
                                  # largest relative difference of a continuous key between sdcMicro's
                                  # variant and ours (ours rounds to the keys' precision)
                                  numeric_difference = max(abs(as.matrix(variants[[plan]][, numeric_keys]) -
                                                               as.matrix(ours[, numeric_keys])) /
                                                           pmax(abs(as.matrix(ours[, numeric_keys])), 1)),
                                  same_keys = sum(mapply(identical, lapply(variants[[plan]][, keys], as.numeric),
                                                         lapply(ours[, keys], as.numeric))))
}

steps_elapsed <- sum(vapply(timings, function(t) t$elapsed, numeric(1)))
steps_cpu <- sum(vapply(timings, function(t) t$cpu, numeric(1)))
cat(sprintf("%8.2f s  sum of steps (elapsed), %.2f s CPU; loading sdcMicro %.2f s (not counted)\n",
            steps_elapsed, steps_cpu, load_time[["elapsed"]]))
write_json(list(timings = timings, figures = figures, total_elapsed = steps_elapsed, total_cpu = steps_cpu,
                load_elapsed = load_time[["elapsed"]], n = nrow(wave)),
           args[3], auto_unbox = TRUE, digits = NA, null = "null", na = "null")
