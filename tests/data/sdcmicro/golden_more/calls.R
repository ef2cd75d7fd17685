# calls.R -- sdcMicro 5.8.1 outputs for issue 37 (model-based risk, microaggregation methods and
# measures, ...) on the inputs in ../more/ and ../ (sdcMicro's data sets). Our code: the calls and the
# writing of the outputs; sdcMicro's own code is loaded from outside the repository.
#
# Run from this folder:   SDCMICRO_LOAD=/work/rlib/load.R Rscript calls.R
# (SDCMICRO_LOAD is an R file that makes sdcMicro's functions available: `library(sdcMicro)` of an
# installed 5.8.1, or the loader of /work/rlib/README.md.)
ld <- Sys.getenv("SDCMICRO_LOAD", "")
if (nzchar(ld)) source(ld) else suppressPackageStartupMessages(library(sdcMicro))
suppressPackageStartupMessages({ library(jsonlite); library(data.table); library(MASS); library(cluster); library(robustbase) })
IN <- function(f) file.path("..", f)

# shortest decimal string that reads back to the same double (15, 16 or 17 significant digits)
num_str <- function(x) {
  out <- rep("", length(x))
  out[is.nan(x)] <- "NaN"
  ok <- !is.na(x)
  v <- x[ok]
  s <- formatC(v, digits = 15, format = "g")
  for (d in 16:17) {
    bad <- as.numeric(s) != v
    if (!any(bad)) break
    s[bad] <- formatC(v[bad], digits = d, format = "g")
  }
  out[ok] <- trimws(s)
  out
}
# CSV: header, no row names, NA as empty cell, doubles round-trip exactly, text columns quoted
wcsv <- function(df, file) {
  df <- as.data.frame(df, stringsAsFactors = FALSE)
  q <- integer(0)
  for (j in seq_along(df)) {
    v <- df[[j]]
    if (is.factor(v)) v <- as.character(v)
    if (is.character(v)) {
      q <- c(q, j)
      df[[j]] <- v
    } else if (is.double(v)) {
      df[[j]] <- num_str(v)
    } else {
      s <- as.character(v)
      s[is.na(v)] <- ""
      df[[j]] <- s
    }
  }
  write.table(df, file, sep = ",", row.names = FALSE, col.names = TRUE,
              quote = if (length(q)) q else FALSE, na = "", qmethod = "double")
}
# JSON: doubles written with the same round-trip digits as the CSVs; Inf/-Inf/NaN as strings, NA as null;
# vectors of length > 1 (and I()-wrapped ones) as arrays
json_num <- function(v) {
  s <- num_str(v)
  s[is.infinite(v) & v > 0] <- "\"Inf\""
  s[is.infinite(v) & v < 0] <- "\"-Inf\""
  s[is.nan(v)] <- "\"NaN\""
  s[is.na(v) & !is.nan(v)] <- "null"
  s
}
jprep <- function(x) {
  if (is.list(x) && !is.data.frame(x)) {
    x <- x[!vapply(x, is.null, logical(1))]
    return(lapply(x, jprep))
  }
  if (is.double(x)) {
    s <- json_num(unclass(x))
    if (length(x) == 1 && !inherits(x, "AsIs")) return(structure(s, class = "json"))
    return(structure(paste0("[", paste(s, collapse = ", "), "]"), class = "json"))
  }
  if (length(x) > 1 && !inherits(x, "AsIs")) return(I(x))
  x
}
wjson <- function(x, f) write_json(jprep(x), f, auto_unbox = TRUE, pretty = TRUE, json_verbatim = TRUE, na = "null")

calls <- list()   # every call, by output name, for the README and calls.json
# ============================================================================ m1: modRisk
m1 <- read.csv(IN("more/in_m1_modrisk_testdata.csv"))
m1f <- m1
for (v in c("urbrur", "water", "sex")) m1f[[v]] <- factor(m1f[[v]])
mr_out <- list()
mr_run <- function(name, data, method, weights, formula, bound = Inf, datadesc) {
  r <- tryCatch(modRisk(data, method = method, weights = weights, formulaM = formula, bound = bound),
                error = function(e) e)
  if (inherits(r, "error")) {
    mr_out[[name]] <<- list(call = sprintf("modRisk(%s, method=\"%s\", weights=\"%s\", formulaM=%s, bound=%s)",
                                           datadesc, method, weights, paste(deparse(formula), collapse = ""), bound),
                            error = conditionMessage(r))
    return(invisible())
  }
  fit <- r$fitted
  if (method == "IPF") {
    cells <- as.data.frame.table(fit, stringsAsFactors = FALSE)
    colnames(cells)[ncol(cells)] <- "Fk"
  } else {
    cells <- data.frame(Fk = as.numeric(fit))
  }
  mr_out[[name]] <<- list(call = sprintf("modRisk(%s, method=\"%s\", weights=\"%s\", formulaM=%s, bound=%s)",
                                         datadesc, method, weights, paste(deparse(formula), collapse = ""), bound),
                          method = method, weights = weights, formula = paste(deparse(formula), collapse = ""),
                          bound = bound, gr1 = r$gr1, gr2 = r$gr2, n_fitted_cells = nrow(cells),
                          sum_fitted = sum(cells$Fk))
}
F4 <- ~urbrur + water + sex + age_band
for (m in c("default", "CE", "PML", "weightedLLM", "IPF")) {
  for (w in c("sampling_weight", "household_weights")) {
    mr_run(sprintf("num_%s_%s", m, w), m1, m, w, F4, datadesc = "m1")
    mr_run(sprintf("fac_%s_%s", m, w), m1f, m, w, F4, datadesc = "m1f")
  }
}
F3 <- ~urbrur + water + sex
for (w in c("sampling_weight", "household_weights")) {
  mr_run(sprintf("ipf3_%s", w), m1, "IPF", w, F3, datadesc = "m1")
  mr_run(sprintf("fac3_default_%s", w), m1f, "default", w, F3, datadesc = "m1f")
}
FI <- ~urbrur + water + sex + age_band + sex:age_band
FI2 <- ~urbrur * water + sex * age_band
for (m in c("default", "CE", "PML", "weightedLLM")) {
  mr_run(sprintf("int_%s", m), m1f, m, "household_weights", FI, datadesc = "m1f")
  mr_run(sprintf("int2_%s", m), m1f, m, "household_weights", FI2, datadesc = "m1f")
}
for (b in c(1, 2, 5)) for (m in c("default", "CE", "PML")) {
  mr_run(sprintf("bound%d_%s", b, m), m1f, m, "household_weights", F4, bound = b, datadesc = "m1f")
}
# sdcMicro's sums run over every counted cell (as.numeric(f == 1) * risk): a cell of f_k > 1 whose
# risk is not finite (v_k = 0 gives 0/0; 1 / w summing above 1 gives exp(-v) = Inf) makes gr1/gr2 NaN,
# so the same models are also run with bound = 1 and 2 (sample uniques / pairs only)
for (b in c(1, 2)) {
  for (m in c("default", "CE", "PML", "weightedLLM")) {
    mr_run(sprintf("b%d_num_%s_household_weights", b, m), m1, m, "household_weights", F4, bound = b, datadesc = "m1")
    mr_run(sprintf("b%d_int_%s", b, m), m1f, m, "household_weights", FI, bound = b, datadesc = "m1f")
    mr_run(sprintf("b%d_int2_%s", b, m), m1f, m, "household_weights", FI2, bound = b, datadesc = "m1f")
    mr_run(sprintf("b%d_fac_%s_sampling_weight", b, m), m1f, m, "sampling_weight", F4, bound = b, datadesc = "m1f")
  }
  mr_run(sprintf("b%d_ipf3_household_weights", b), m1, "IPF", "household_weights", F3, bound = b, datadesc = "m1")
  mr_run(sprintf("b%d_ipf3_sampling_weight", b), m1, "IPF", "sampling_weight", F3, bound = b, datadesc = "m1")
}
wjson(mr_out, "m1_modrisk.json")
cat("m1 done\n")

# ============================================================================ m2: microaggregation
casc <- read.csv(IN("CASCrefmicrodata.csv"))
tarr <- read.csv(IN("Tarragona.csv"))
wcasc <- read.csv(IN("more/in_m2_weights_casc.csv"))$weight
wtarr <- read.csv(IN("more/in_m2_weights_tarr.csv"))$weight
VC <- c("AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX")
VT <- c("CURRENT.ASSETS", "TREASURY", "PAID.UP.CAPITAL", "SALES", "LABOR.COSTS")
ma_calls <- list()
ma_cols <- list()
ma_run <- function(file, col, data, datadesc, vars, ...) {
  args <- list(...)
  r <- do.call(microaggregation, c(list(obj = data[, vars, drop = FALSE], variables = vars), args))
  mx <- as.data.frame(r$mx)
  for (v in vars) ma_cols[[file]][[paste0(col, "__", v)]] <<- as.numeric(mx[[v]])
  argtxt <- paste(sprintf("%s=%s", names(args), vapply(args, function(a) {
    if (is.character(a)) sprintf("\"%s\"", a) else if (length(a) > 1) "w" else deparse(a) }, "")), collapse = ", ")
  ma_calls[[file]][[col]] <<- sprintf("microaggregation(%s[, %s, drop=FALSE], variables=%s, %s)$mx", datadesc,
                                      paste(deparse(vars), collapse = ""), paste(deparse(vars), collapse = ""), argtxt)
}
DET <- c("mdav", "simple", "single", "onedims", "pca", "pppca")
for (m in DET) {
  ma_run("m2_casc_deterministic.csv", paste0(m, "_mean"), casc, "casc", VC, method = m, aggr = 3)
  if (!m %in% c("mdav")) {
    ma_run("m2_casc_deterministic.csv", paste0(m, "_median"), casc, "casc", VC, method = m, aggr = 3, measure = "median")
    ma_run("m2_casc_deterministic.csv", paste0(m, "_onestep"), casc, "casc", VC, method = m, aggr = 3, measure = "onestep")
    ma_run("m2_casc_deterministic.csv", paste0(m, "_trim_k5"), casc, "casc", VC, method = m, aggr = 5, measure = "trim", trim = 0.2)
  }
}
for (m in c("mdav", "simple", "single", "onedims", "pca", "pppca")) {
  ma_run("m2_tarr_deterministic.csv", paste0(m, "_mean_k4"), tarr, "tarr", VT, method = m, aggr = 4)
}
for (m in c("simple", "single", "onedims", "pca", "pppca")) {
  ma_run("m2_tarr_weighted.csv", paste0(m, "_wmean"), tarr, "tarr", VT, method = m, aggr = 3, weights = wtarr)
  ma_run("m2_tarr_weighted.csv", paste0(m, "_wmedian"), tarr, "tarr", VT, method = m, aggr = 3, measure = "median", weights = wtarr)
  ma_run("m2_casc_weighted.csv", paste0(m, "_wmean"), casc, "casc", VC, method = m, aggr = 3, weights = wcasc)
  ma_run("m2_casc_weighted.csv", paste0(m, "_wmedian"), casc, "casc", VC, method = m, aggr = 3, measure = "median", weights = wcasc)
}
# a single variable: sdcMicro applies mafast whatever the method
for (ms in c("mean", "median")) {
  ma_run("m2_casc_mafast.csv", paste0("mafast_", ms), casc, "casc", "AGI", method = "pca", aggr = 3, measure = ms)
}
# randomised methods: the random part recorded with its result (rmd: covMcd of the standardised data;
# mcdpca: MASS::cov.mcd; the clustering methods: cluster::clara, whose sampling is deterministic with
# its default rngR = FALSE)
set.seed(2026)
ma_run("m2_casc_randomised.csv", "rmd_mean", casc, "casc", VC, method = "rmd", aggr = 3)
set.seed(2026)
y <- apply(casc[, VC], 2, function(x) (x - mean(x, na.rm = TRUE)) / sd(x, na.rm = TRUE))
rr <- covMcd(y)
rmd_md <- stats::mahalanobis(y, center = rr$center, cov = rr$cov)
for (m in c("mcdpca")) {
  set.seed(2026)
  ma_run("m2_casc_randomised.csv", paste0(m, "_mean"), casc, "casc", VC, method = m, aggr = 3)
}
# the MCD estimates drawn by "mcdpca" and by "clustmcdpca" (one per cluster of at least 5 records, in
# cluster order), drawn again after the same set.seed as the calls above
set.seed(2026)
x.mcd <- cov.mcd(casc[, VC], cor = TRUE)
x.scale <- scale(casc[, VC], x.mcd$center, sqrt(diag(x.mcd$cor)))
mcd_score <- stats::princomp(x.scale, covmat = x.mcd)$scores[, 1]
mcd_est <- list(mcdpca = list(n = nrow(casc), center = unname(x.mcd$center), cov = unname(x.mcd$cov)))
cl <- clara(casc[, VC], 8)
set.seed(2026)
clust_est <- list()
for (i in 1:8) {
  w <- which(cl$clustering == i)
  if (length(w) >= length(VC)) {
    e <- cov.mcd(casc[w, VC], cor = TRUE)
    clust_est[[length(clust_est) + 1]] <- list(cluster = i, n = length(w), center = unname(e$center), cov = unname(e$cov))
  }
}
mcd_est$clustmcdpca <- clust_est
wjson(mcd_est, "m2_casc_mcd_estimates.json")
for (m in c("clustpca", "clustpppca", "influence", "clustmcdpca")) {
  set.seed(2026)
  ma_run("m2_casc_randomised.csv", paste0(m, "_mean"), casc, "casc", VC, method = m, aggr = 3)
}
set.seed(2026)
ma_run("m2_casc_randomised.csv", "clustpca_median", casc, "casc", VC, method = "clustpca", aggr = 3, measure = "median")
ma_cols[["m2_casc_randomised.csv"]][["rmd_robust_distance"]] <- as.numeric(rmd_md)
ma_cols[["m2_casc_randomised.csv"]][["mcdpca_score1"]] <- as.numeric(mcd_score)
ma_cols[["m2_casc_randomised.csv"]][["clara_cluster"]] <- as.integer(cl$clustering)
for (f in names(ma_cols)) wcsv(data.frame(row = seq_along(ma_cols[[f]][[1]]), ma_cols[[f]], check.names = FALSE), f)
wjson(ma_calls, "m2_microaggregation_calls.json")
cat("m2 done\n")

# ============================================================================ m3: microaggrGower
g200 <- read.csv(IN("more/in_m3_gower_testdata200.csv"))
for (i in c(1:7, 9)) g200[, i] <- as.factor(g200[, i])   # as in sdcMicro's example
g200o <- g200
g200o$walls <- factor(g200o$walls, ordered = TRUE)
g200o$water <- factor(g200o$water, ordered = TRUE)
NUMG <- c("age", "expend", "income", "savings")
gw_cols <- list(); gw_calls <- list()
gw_run <- function(name, data, datadesc, variables, dist_var, ...) {
  args <- list(...)
  r <- do.call(microaggrGower, c(list(obj = data, variables = variables, dist_var = dist_var, numFun = mean), args))
  for (v in variables) gw_cols[[paste0(name, "__", v)]] <<- as.numeric(r[[v]])
  extra <- if (length(args)) paste0(", ", paste(sprintf("%s=%s", names(args), vapply(args, function(a) paste(deparse(a), collapse = ""), "")), collapse = ", ")) else ""
  gw_calls[[name]] <<- sprintf("microaggrGower(%s, variables=%s, dist_var=%s, numFun=mean%s)", datadesc,
                               paste(deparse(variables), collapse = ""), paste(deparse(dist_var), collapse = ""), extra)
}
gw_run("num4", g200, "g200", NUMG, c("age", "income", "savings"))
gw_run("sex_num", g200, "g200", NUMG, c("age", "sex", "income", "savings"))
gw_run("mixed_types", g200, "g200", NUMG, c("age", "sex", "relat", "hhcivil", "income", "expend"))
gw_run("weighted", g200, "g200", NUMG, c("age", "sex", "relat", "income", "savings"), weights = c(2, 1, 0.5, 1, 3))
gw_run("ordinal", g200o, "g200o", NUMG, c("age", "walls", "water", "sex", "income"))
gw_run("aggr5_ignored", g200, "g200", NUMG, c("age", "income", "savings"), aggr = 5)
wcsv(data.frame(row = seq_len(nrow(g200)), gw_cols, check.names = FALSE), "m3_gower_testdata200.csv")
wjson(gw_calls, "m3_gower_calls.json")
cat("m3 done\n")

# ============================================================================ m4: mvTopCoding
mv_cols <- list(); mv_est <- list()
mv_run <- function(name, x, datadesc, vars, alpha, double = FALSE) {
  xm <- as.matrix(x[, vars])
  if (double) storage.mode(xm) <- "double"
  set.seed(2026)
  cv <- robustbase::covMcd(x = as.data.table(xm))
  set.seed(2026)
  rob <- as.data.frame(mvTopCoding(xm, alpha = alpha))
  ctr <- colMeans(xm)
  cla <- as.data.frame(mvTopCoding(xm, maha = mahalanobis(xm, ctr, cov(xm)), center = ctr, alpha = alpha))
  for (v in vars) {
    mv_cols[[paste0(name, "_robust__", v)]] <<- as.numeric(rob[[v]])
    mv_cols[[paste0(name, "_classical__", v)]] <<- as.numeric(cla[[v]])
  }
  mv_est[[name]] <<- list(
    robust_call = sprintf("set.seed(2026); mvTopCoding(xm, alpha=%s), xm = as.matrix(%s[, %s])%s", alpha, datadesc,
                          paste(deparse(vars), collapse = ""), if (double) " with storage.mode double" else ""),
    classical_call = sprintf("mvTopCoding(xm, maha=mahalanobis(xm, colMeans(xm), cov(xm)), center=colMeans(xm), alpha=%s), xm = as.matrix(%s[, %s])%s",
                             alpha, datadesc, paste(deparse(vars), collapse = ""), if (double) " with storage.mode double" else ""),
    integer_input = is.integer(xm),
    variables = I(vars), alpha = alpha, n = nrow(xm),
    covMcd_center = unname(cv$center), covMcd_cov = unname(as.numeric(cv$cov)),
    pulled_robust = sum(mahalanobis(xm, cv$center, cv$cov) > qchisq(1 - alpha, length(vars))),
    pulled_classical = sum(mahalanobis(xm, ctr, cov(xm)) > qchisq(1 - alpha, length(vars))))
}
mv_run("casc_a025", casc, "casc", VC, 0.025)
mv_run("casc_a05", casc, "casc", VC, 0.05)
mv_run("cascdbl_a025", casc, "casc", VC, 0.025, double = TRUE)
mv_run("tarrdbl_a025", tarr, "tarr", VT, 0.025, double = TRUE)
mv_run("tarr_a01", tarr, "tarr", VT, 0.01)
for (f in c("casc", "tarr")) {
  cols <- mv_cols[startsWith(names(mv_cols), f)]
  wcsv(data.frame(row = seq_along(cols[[1]]), cols, check.names = FALSE), sprintf("m4_mvTopCoding_%s.csv", f))
}
wjson(mv_est, "m4_mvTopCoding.json")
cat("m4 done\n")

# ============================================================================ m5: dRisk, dRiskRMD, indivRisk
nc5 <- read.csv(IN("more/in_m7_casc_1to5_addnoise50.csv"))[, -1]
nt3 <- read.csv(IN("more/in_m7_tarragona_5to7_addnoise150.csv"))[, -1]
oc5 <- casc[, colnames(nc5)]
ot3 <- tarr[, colnames(nt3)]
m2det <- read.csv("m2_casc_deterministic.csv")
mdavVC <- setNames(m2det[, paste0("mdav_mean__", VC)], VC)
pcaVC <- setNames(m2det[, paste0("pca_mean__", VC)], VC)
pairs <- list(casc_noise50 = list(x = oc5, xm = nc5, desc = "casc[, 1:5] vs in_m7_casc_1to5_addnoise50 (without row)"),
              tarr_noise150 = list(x = ot3, xm = nt3, desc = "Tarragona[, 5:7] vs in_m7_tarragona_5to7_addnoise150 (without row)"),
              casc_mdav3 = list(x = casc[, VC], xm = mdavVC, desc = "casc[, VC] vs m2 mdav_mean"),
              casc_pca3 = list(x = casc[, VC], xm = pcaVC, desc = "casc[, VC] vs m2 pca_mean"))
dr_out <- list(); rmd_cols <- list()
for (pn in names(pairs)) {
  pr <- pairs[[pn]]
  e <- list(pair = pr$desc, variables = I(colnames(pr$x)))
  for (k in c(0.01, 0.05, 0.1, 0.5)) e[[sprintf("dRisk_k%s", k)]] <- dRisk(pr$x, xm = pr$xm, k = k)
  for (kk in list(c(0.01, 0.05), c(0.05, 0.05), c(0.1, 0.01))) {
    set.seed(2026)
    r <- dRiskRMD(pr$x, xm = pr$xm, k = kk[1], k2 = kk[2])
    tag <- sprintf("k%s_k2%s", kk[1], kk[2])
    e[[paste0("dRiskRMD_", tag)]] <- r[c("risk1", "risk2", "wrisk1", "wrisk2")]
    rmd_cols[[paste0(pn, "_", tag, "_riskvec1")]] <- r$riskvec1
    rmd_cols[[paste0(pn, "_", tag, "_riskvec2")]] <- r$riskvec2
  }
  set.seed(2026)
  e$covMcd_cov_of_scaled_x <- as.numeric(covMcd(scale(pr$x))$cov)
  dr_out[[pn]] <- e
}
wjson(dr_out, "m5_dRisk.json")
for (pfx in c("casc", "tarr")) {
  cols <- rmd_cols[startsWith(names(rmd_cols), pfx)]
  wcsv(data.frame(row = seq_along(cols[[1]]), cols, check.names = FALSE), sprintf("m5_dRiskRMD_riskvec_%s.csv", pfx))
}

# indivRisk with qual: fk, Fk counted here (complete keys: the group size and the group's weight sum,
# what freqCalc returns without missing values) and handed to sdcMicro's indivRisk
td <- read.csv(IN("testdata.csv"))
KEYS7 <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
K4 <- c("urbrur", "roof", "electcon", "sex")
td$w <- td$sampling_weight * (1 + ((seq_len(nrow(td)) - 1) %% 7) / 10)
frq <- function(d, keys, w) {
  dt <- data.table(d[, keys], w = d[[w]])
  dt[, id := .I]
  dt[, `:=`(fk = .N, Fk = sum(w)), by = keys]
  list(freqCalc = d, keyVars = keys, fk = dt$fk, Fk = dt$Fk)
}
ir_cols <- list(); ir_calls <- list()
for (spec in list(list(n = "td_k7_w", keys = KEYS7, w = "w"), list(n = "td_k4_w", keys = K4, w = "w"))) {
  f <- frq(td, spec$keys, spec$w)
  ir_cols[[paste0(spec$n, "_fk")]] <- f$fk
  ir_cols[[paste0(spec$n, "_Fk")]] <- f$Fk
  # "exact" loops over 0..fk-3 twice per record: only with the 7 keys (fk up to 176)
  for (m in if (spec$n == "td_k7_w") c("approx", "exact") else "approx") for (q in c(1, 1.5, 2)) {
    col <- sprintf("%s_%s_qual%s", spec$n, m, q)
    ir_cols[[col]] <- indivRisk(f, method = m, qual = q)$rk
    ir_calls[[col]] <- sprintf("indivRisk(freqCalc(testdata, keyVars=%s, w=\"%s\"), method=\"%s\", qual=%s)$rk",
                               paste(deparse(spec$keys), collapse = ""), spec$w, m, q)
  }
}
wcsv(data.frame(row = seq_len(nrow(td)), w = td$w, ir_cols, check.names = FALSE), "m5_indivRisk_qual_testdata.csv")
wjson(ir_calls, "m5_indivRisk_calls.json")
cat("m5 done\n")

# ============================================================================ m6: recordLinkage
rl_y <- read.csv(IN("more/in_m7_recordlinkage_casc300_addnoise50.csv"))[, -1]
rl_x <- casc[1:300, colnames(rl_y)]
RLV <- colnames(rl_y)
rl_out <- list(); rl_cols <- list()
rl_run <- function(name, ...) {
  args <- list(...)
  r <- do.call(recordLinkage, c(list(x = rl_x, y = rl_y, vars = RLV), args))
  extra <- paste(sprintf(", %s=%s", names(args), vapply(args, function(a) paste(deparse(a), collapse = ""), "")), collapse = "")
  rl_out[[name]] <<- list(call = sprintf("recordLinkage(casc[1:300, %s], in_m7_recordlinkage_casc300_addnoise50 (without row), vars=%s%s)",
                                         paste(deparse(RLV), collapse = ""), paste(deparse(RLV), collapse = ""), extra),
                          correct_matches = r$correct_matches, correct_match_rate = r$correct_match_rate,
                          mean_distance = r$mean_distance, total_distance = r$total_distance)
  rl_cols[[paste0(name, "__y_row")]] <<- r$matches$y_row
  rl_cols[[paste0(name, "__distance")]] <<- r$matches$distance
  rl_cols[[paste0(name, "__n_best")]] <<- r$matches$n_best
}
rl_run("gower", distance = "gower")
rl_run("euclidean", distance = "euclidean")
rl_run("manhattan", distance = "manhattan")
rl_run("gower_w", distance = "gower", weights = c(3, 1, 1, 2, 0.5))
rl_run("manhattan_w", distance = "manhattan", weights = c(3, 1, 1, 2, 0.5))
rl_run("gower_tol", distance = "gower", tol = 0.002)
wjson(rl_out, "m6_recordLinkage.json")
wcsv(data.frame(x_row = 1:300, rl_cols, check.names = FALSE), "m6_recordLinkage_matches.csv")
cat("m6 done\n")

# ============================================================================ m7: infoLoss, dUtility, IL_correl, IL_variables
ilo <- read.csv(IN("more/in_m7_infoloss_data.csv"))
ils <- read.csv(IN("more/in_m7_infoloss_data_swapped.csv"))
il_out <- list()
il_run <- function(name, ...) {
  args <- list(...)
  r <- do.call(infoLoss, c(list(data = data.table::copy(data.table(ilo)), data_swapped = data.table::copy(data.table(ils))), args))
  meas <- as.data.frame(r$measures)
  e <- list(call = sprintf("infoLoss(in_m7_infoloss_data, in_m7_infoloss_data_swapped%s)",
                           paste(sprintf(", %s=%s", names(args), vapply(args, function(a) paste(deparse(a), collapse = ""), "")), collapse = "")),
            n_cells = nrow(r$cellvalues), false_zero = r$false_zero, false_nonzero = r$false_nonzero,
            measures_what = I(as.character(meas$what)),
            overview = list(noise = I(as.numeric(r$overview$noise)), cnt = I(as.numeric(r$overview$cnt)), pct = I(as.numeric(r$overview$pct))))
  e$measures <- list(); e$cumdistr <- list()
  for (m in setdiff(colnames(meas), "what")) e$measures[[m]] <- I(as.numeric(meas[[m]]))
  for (cd in grep("^cumdistr", names(r), value = TRUE)) {
    e$cumdistr[[cd]] <- list(cat = I(as.character(r[[cd]]$cat)), cnt = I(as.numeric(r[[cd]]$cnt)), pct = I(as.numeric(r[[cd]]$pct)))
  }
  il_out[[name]] <<- e
}
il_run("urbrur_water", table_vars = c("urbrur", "water"))
il_run("four", table_vars = c("roof", "walls", "water", "sex"))
il_run("four_hid", table_vars = c("roof", "walls", "water", "sex"), hid = "ori_hid")
il_run("four_inner_nozeros", table_vars = c("roof", "walls", "water", "sex"), exclude_zeros = TRUE, only_inner_cells = TRUE)
il_run("water_sex_quant", table_vars = c("water", "sex"), probs = c(0, 0.25, 0.5, 0.9, 1), quantvals = c(0, 0.01, 0.1, 1, Inf))
wjson(il_out, "m7_infoLoss.json")

# dUtility, IL_correl, IL_variables on the m7 pairs
xmix <- read.csv(IN("more/in_m7_ilvariables_mixed_x.csv"))
xmmix <- read.csv(IN("more/in_m7_ilvariables_mixed_xm.csv"))
mixed <- function(d, ordered_water) {
  d$urbrur <- factor(d$urbrur)
  d$roof <- factor(d$roof)
  d$water <- if (ordered_water) factor(d$water, levels = sort(unique(c(xmix$water, xmmix$water))), ordered = TRUE) else factor(d$water)
  d$age <- as.numeric(d$age)
  d$income <- as.numeric(d$income)
  d
}
du_out <- list()
for (pn in c("casc_noise50", "tarr_noise150", "casc_mdav3", "casc_pca3")) {
  pr <- pairs[[pn]]
  du_out[[pn]] <- list(pair = pr$desc, IL1 = dUtility(pr$x, xm = pr$xm, method = "IL1"),
                       IL1s = dUtility(pr$x, xm = pr$xm, method = "IL1s"),
                       eigen = dUtility(pr$x, xm = pr$xm, method = "eigen"),
                       IL_correl = as.numeric(IL_correl(as.data.frame(pr$x), as.data.frame(pr$xm))),
                       IL_variables = as.numeric(IL_variables(as.data.frame(lapply(pr$x, as.numeric)), as.data.frame(lapply(pr$xm, as.numeric)))))
}
for (ow in c(FALSE, TRUE)) {
  r <- IL_variables(mixed(xmix, ow), mixed(xmmix, ow))
  du_out[[if (ow) "mixed_water_ordered" else "mixed_water_nominal"]] <- list(
    pair = sprintf("in_m7_ilvariables_mixed_x vs _xm; urbrur, roof factors, water %s, age and income numeric (double)",
                   if (ow) "ordered (levels sorted over both files)" else "factor"),
    IL_variables = as.numeric(r), indiv_distances = as.list(attr(r, "indiv_distances")))
}
wjson(du_out, "m7_dUtility_IL.json")
cat("m7 done\n")

# ============================================================================ m8: rankSwap with P = 0
# P = 0 draws no partner (RankSwapping.h: the candidates of rank j are j + 1 .. j + N*P - 1): only the
# top and bottom coding act, and no random number is used.
cascna <- casc[, VC]
cascna$AGI[seq(7, nrow(cascna), by = 7)] <- NA
cascna$FEDTAX[seq(3, nrow(cascna), by = 11)] <- NA
rs_cols <- list(); rs_calls <- list()
rs_run <- function(name, data, datadesc, top, bottom) {
  r <- rankSwap(data, variables = colnames(data), TopPercent = top, BottomPercent = bottom, P = 0)
  for (v in colnames(data)) rs_cols[[paste0(name, "__", v)]] <<- as.numeric(r[[v]])
  rs_calls[[name]] <<- sprintf("rankSwap(%s, variables=%s, TopPercent=%s, BottomPercent=%s, P=0)", datadesc,
                               paste(deparse(colnames(data)), collapse = ""), top, bottom)
}
# one-sided coding (TopPercent > 0 = BottomPercent or the reverse) is left out: the second hash sort of
# RankSwapping.h then indexes its bucket array far outside its bounds (the values not coded lie
# outside [MinV, MaxV], which are recomputed from the one coded mean) and R stops with a segfault
for (tb in list(c(5, 5), c(10, 10), c(0, 0), c(35, 20), c(3, 7))) {
  rs_run(sprintf("casc_t%s_b%s", tb[1], tb[2]), casc[, VC], "casc[, VC]", tb[1], tb[2])
}
rs_run("cascna_t5_b5", cascna, "cascna", 5, 5)
rs_run("cascna_t35_b20", cascna, "cascna", 35, 20)
wcsv(data.frame(row = seq_len(nrow(casc)), rs_cols, check.names = FALSE), "m8_rankSwap_P0.csv")
wjson(list(calls = rs_calls, cascna = "casc[, VC] with AGI NA in rows 7, 14, 21, ... and FEDTAX NA in rows 3, 14, 25, ... (every 11th from 3)"),
      "m8_rankSwap_calls.json")
cat("m8 done\n")

# ============================================================================ m9: addNoise, random part saved
# addNoise's result depends on R's random numbers: each call runs after set.seed(seed), and the same seed
# then redraws what addNoise drew (the same calls in the same order), saved as standard-normal draws:
# additive, correlated2: one rnorm(N) per column (rnorm(N, m, s) is m + s * rnorm(N)); correlated:
# MASS::mvrnorm's matrix(rnorm(p * N), N) (its Sigma = noise/100 * cov(na.omit(x)), eigen() of it is
# saved too); outdect: robustbase::covMcd(na.omit(x), alpha = 1/2) (it draws from R's generator) and
# then one rnorm(k) per column for the k outliers. restr draws nothing. "check" is the largest
# difference between addNoise's values and the values rebuilt here from the saved draws.
m9_casc <- read.csv(IN("CASCrefmicrodata.csv"))[, c("AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX")]
m9_cascna <- m9_casc
m9_cascna$AGI[seq(7, nrow(m9_cascna), by = 7)] <- NA
m9_cascna$FEDTAX[seq(3, nrow(m9_cascna), by = 11)] <- NA
an_cols <- list(); an_draws <- list(); an_out <- list()
an_run <- function(name, data, datadesc, method, seed, noise = 150, delta = 0.1) {
  x <- as.matrix(data); N <- nrow(x); m <- ncol(x)
  set.seed(seed)
  r <- addNoise(data, variables = colnames(data), noise = noise, method = method, delta = delta)
  xm <- as.matrix(r$xm)
  for (j in seq_len(m)) an_cols[[paste0(name, "__", colnames(data)[j])]] <<- as.numeric(xm[, j])
  entry <- list(call = sprintf("set.seed(%d); addNoise(%s, variables=%s, noise=%s, method=\"%s\"%s)", seed,
                               datadesc, paste(deparse(colnames(data)), collapse = ""), noise, method,
                               if (method == "correlated2") sprintf(", delta=%s", delta) else ""),
                seed = seed, noise = noise, N = N)
  sdv <- apply(x, 2, sd, na.rm = TRUE)
  set.seed(seed)
  if (method %in% c("additive", "correlated2")) {
    z <- sapply(seq_len(m), function(j) rnorm(N))
    rebuilt <- if (method == "additive") x + sweep(z, 2, noise / 100 * sdv, "*") else {
      d1 <- sqrt(1 - delta^2)
      x * d1 + delta * (sweep(z, 2, sdv, "*") + rep((1 - d1) / delta * colMeans(x, na.rm = TRUE), each = N))
    }
    for (j in seq_len(m)) an_draws[[paste0(name, "__z", j)]] <<- z[, j]
    entry$sd <- I(sdv); entry$delta <- delta
  } else if (method == "correlated") {
    sigma <- noise / 100 * cov(na.omit(x))
    eS <- eigen(sigma, symmetric = TRUE)
    z <- matrix(rnorm(m * N), N)
    rebuilt <- x + t(eS$vectors %*% diag(sqrt(pmax(eS$values, 0)), m) %*% t(z))
    for (j in seq_len(m)) an_draws[[paste0(name, "__z", j)]] <<- z[, j]
    entry$n_complete <- nrow(na.omit(x)); entry$sigma <- I(as.numeric(sigma))
    entry$eigen_values <- I(eS$values); entry$eigen_vectors <- I(as.numeric(eS$vectors))
  } else if (method == "outdect") {
    q1 <- apply(x, 2, quantile, probs = 0.99, na.rm = TRUE)
    xMcd <- covMcd(na.omit(x), alpha = 1/2)
    rd <- sqrt(mahalanobis(x, xMcd$center, xMcd$cov))
    limit <- sqrt(qchisq(0.975, m))
    univ <- unlist(lapply(seq_len(m), function(i) which(x[, i] > q1[i])))
    outliers <- unique(sort(c(univ, which(rd > limit))))
    k <- length(outliers)
    z <- sapply(seq_len(m), function(j) rnorm(k))
    scale <- 1.96 * sdv / sqrt(N) * (noise / 100)
    rebuilt <- x
    rebuilt[outliers, ] <- x[outliers, ] + sweep(matrix(z, k), 2, scale, "*")
    an_cols[[paste0(name, "__robust_distance")]] <<- as.numeric(rd)
    entry$q99 <- I(as.numeric(q1)); entry$limit <- limit; entry$n_complete <- nrow(na.omit(x))
    entry$mcd_center <- I(as.numeric(xMcd$center)); entry$mcd_cov <- I(as.numeric(xMcd$cov))
    entry$univariate_outliers <- I(sort(unique(univ))); entry$outliers <- I(outliers)
    entry$scale <- I(as.numeric(scale)); entry$z <- I(as.numeric(z))
  } else {  # restr
    cc <- if (N < 500) sqrt((N - 1 - noise / 100) / ((N + 1) * (1 + noise / 100))) else sqrt((N - 1) / (N + N * noise / 100 - 1))
    d <- (1 - cc) * colMeans(x, na.rm = TRUE)
    # addNoise_restr computes cc * x + d on the data.frame: R recycles d down the columns (element i of
    # the N x m values gets d[(i - 1) %% m + 1]), not d[j] for column j
    rebuilt <- cc * x + matrix(rep_len(d, N * m), N, m)
    entry$c <- cc; entry$d <- I(as.numeric(d))
    entry$check_own_column_means <- max(abs(cc * x + rep(d, each = N) - xm), na.rm = TRUE)
  }
  entry$check <- max(abs(rebuilt - xm), na.rm = TRUE)
  entry$missing_after <- sum(is.na(xm)); entry$missing_before <- sum(is.na(x))
  entry$same_missing_cells <- identical(is.na(xm), is.na(x))
  an_out[[name]] <<- entry
}
seed <- 3700
for (d in list(list(m9_casc, "casc", "casc[, VC]"), list(m9_cascna, "cascna", "cascna"))) {
  for (method in c("additive", "correlated", "correlated2", "restr", "outdect")) {
    seed <- seed + 1
    noise <- switch(method, correlated = 50, 150)
    an_run(paste0(d[[2]], "_", method), d[[1]], d[[3]], method, seed, noise = noise, delta = 0.2)
  }
}
# a third of the records missing FEDTAX: correlated noise's covariance from the remaining complete records
m9_sparse <- m9_casc
m9_sparse$FEDTAX[seq(1, nrow(m9_sparse), by = 3)] <- NA
an_run("sparse_correlated", m9_sparse, "sparse", "correlated", 3799, noise = 150)
an_run("sparse_outdect", m9_sparse, "sparse", "outdect", 3798, noise = 150)
wcsv(data.frame(row = seq_len(nrow(m9_casc)), an_cols, check.names = FALSE), "m9_addNoise.csv")
wcsv(data.frame(row = seq_len(nrow(m9_casc)), an_draws, check.names = FALSE), "m9_addNoise_draws.csv")
wjson(list(calls = an_out,
           cascna = "casc[, VC] with AGI NA in rows 7, 14, 21, ... and FEDTAX NA in rows 3, 14, 25, ... (every 11th from 3)",
           sparse = "casc[, VC] with FEDTAX NA in rows 1, 4, 7, ... (every 3rd)"), "m9_addNoise.json")
cat("m9 done\n")

# ============================================================================ m10: rankSwap with P > 0, pairs saved
# RankSwap.cpp of the loader has sdcMicro's own generator (CRandom of src/Framework.h, seeded by `seed`)
# and returns, beside the values, each variable's P (single precision, from P, R0 or K0), the number of
# values not coded and the partner of each rank. The calls are rankSwap()'s; RankSwap() is then called
# again on the matrix rankSwap() builds, with the same seed, for those extra parts (`same_values`: TRUE
# when both gave the same values). `<name>__partner_<variable>`: the record (1-based) whose value the
# record received, NA when it kept its own (coded, missing or no partner left).
rs2_cols <- list(); rs2_pairs <- list(); rs2_out <- list()
rs2_run <- function(name, data, datadesc, seed, top = 5, bottom = 5, P = NULL, R0 = NULL, K0 = NULL) {
  R0_given <- R0
  r <- rankSwap(data, variables = colnames(data), TopPercent = top, BottomPercent = bottom, P = P, R0 = R0,
                K0 = K0, seed = seed)
  x <- as.matrix(data); storage.mode(x) <- "double"
  miss <- min(x, na.rm = TRUE) - 1
  x[is.na(x)] <- miss
  d2 <- x; d2[, ] <- NA
  if (is.null(P) && is.null(R0) && is.null(K0)) R0 <- 0.95
  full <- RankSwap(x, d2, miss, top, bottom, if (is.null(K0)) -1 else K0, if (is.null(R0)) -1 else R0,
                   if (is.null(P)) -1 else P, as.integer(seed))
  res <- full$Res; res[res == miss] <- NA
  for (j in seq_len(ncol(x))) {
    v <- colnames(data)[j]
    rs2_cols[[paste0(name, "__", v)]] <<- as.numeric(r[[v]])
    partner <- rep(NA_integer_, nrow(x))
    has <- full$Partner[, j] >= 0
    ranks <- which(has) - 1
    partner[full$Rank[ranks + 1, j] + 1] <- full$Rank[full$Partner[has, j] + 1, j] + 1
    rs2_pairs[[paste0(name, "__partner_", v)]] <<- partner
  }
  args <- c(if (!is.null(P)) sprintf("P=%s", P), if (!is.null(K0)) sprintf("K0=%s", K0),
            if (!is.null(R0_given)) sprintf("R0=%s", R0_given))
  rs2_out[[name]] <<- list(
    call = sprintf("rankSwap(%s, variables=%s, TopPercent=%s, BottomPercent=%s%s, seed=%d)", datadesc,
                   paste(deparse(colnames(data)), collapse = ""), top, bottom,
                   paste0(if (length(args)) ", " else "", paste(args, collapse = ", ")), seed),
    P = I(as.numeric(full$P)), NbNotSwapped = I(as.integer(full$NbNotSwapped)),
    same_values = isTRUE(all.equal(unname(res), unname(as.matrix(r)), tolerance = 0)))
}
rs2_run("casc_P0.05", casc[, VC], "casc[, VC]", 123, P = 0.05)
rs2_run("casc_R0default", casc[, VC], "casc[, VC]", 124)
rs2_run("casc_K0.2", casc[, VC], "casc[, VC]", 125, K0 = 0.2)
rs2_run("casc_t0_b0_P0.1", casc[, VC], "casc[, VC]", 126, top = 0, bottom = 0, P = 0.1)
rs2_run("cascna_P0.05", cascna, "cascna", 127, P = 0.05)
rs2_run("cascna_R0.8", cascna, "cascna", 128, R0 = 0.8)
wcsv(data.frame(row = seq_len(nrow(casc)), rs2_cols, check.names = FALSE), "m10_rankSwap.csv")
wcsv(data.frame(row = seq_len(nrow(casc)), rs2_pairs, check.names = FALSE), "m10_rankSwap_pairs.csv")
wjson(list(calls = rs2_out, cascna = "casc[, VC] with AGI NA in rows 7, 14, 21, ... and FEDTAX NA in rows 3, 14, 25, ... (every 11th from 3)"),
      "m10_rankSwap_calls.json")
cat("m10 done\n")

# ============================================================================ m9 (ROMM): addNoise "ROMM", random part saved
# ROMM draws M = matrix(rnorm(N * N), N) and multiplies x by the Gram-Schmidt orthonormalisation of
# I + p M. On the first 60 records of casc (the N x N matrices stay small); M (column-major) is redrawn
# after the same seed. `check`: the largest difference between addNoise's values and T x rebuilt with
# R's qr() (Q with a positive diagonal of R) from the saved M.
m9r_casc <- m9_casc[1:60, ]
m9r_cascna <- m9_cascna[1:60, ]
romm_out <- list()
romm_run <- function(name, data, datadesc, seed, p) {
  x <- as.matrix(data); N <- nrow(x)
  set.seed(seed)
  r <- addNoise(data, variables = colnames(data), method = "ROMM", p = p)
  set.seed(seed)
  M <- matrix(rnorm(N * N), N)
  q <- qr(diag(1, N) + p * M)
  Q <- qr.Q(q) %*% diag(sign(diag(qr.R(q))))
  xm <- as.matrix(r$xm)
  romm_out[[name]] <<- list(call = sprintf("set.seed(%d); addNoise(%s, variables=%s, method=\"ROMM\", p=%s)", seed,
                                           datadesc, paste(deparse(colnames(data)), collapse = ""), p),
                            seed = seed, p = p, N = N, M = I(as.numeric(M)), xm = I(as.numeric(xm)),
                            missing_before = sum(is.na(x)), missing_after = sum(is.na(xm)),
                            check = max(abs(Q %*% x - xm), na.rm = TRUE))
}
romm_run("casc60_p0.001", m9r_casc, "casc[1:60, VC]", 3811, 0.001)
romm_run("casc60_p0.5", m9r_casc, "casc[1:60, VC]", 3812, 0.5)
romm_run("cascna60_p0.1", m9r_cascna, "cascna[1:60, ]", 3813, 0.1)
wjson(romm_out, "m9_addNoise_ROMM.json")
cat("m9 ROMM done\n")
