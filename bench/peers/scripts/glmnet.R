# One whole glmnet job, run by bench/peers.
#
# usage: Rscript glmnet.R FAMILY DATA P LAMBDA INTERCEPT(0|1) THRESH OUT [PATH LAMBDA_MAX]
#
# Reads the LIBSVM file DATA (read_libsvm below: one readBin of the whole
# file, ':' turned into blanks, one scan of the numbers, the row lengths
# from the positions of ':' and '\n'), as a dense matrix when more than half
# its entries are non-zero and as a Matrix dgCMatrix otherwise, fits
# glmnet(x, y, family = FAMILY, lambda = LAMBDA, standardize = FALSE,
# intercept = INTERCEPT, thresh = THRESH, maxit = 1e7) and writes the
# coefficients to OUT as CSV index,value (1-based; index 0 the intercept)
# with 17 significant digits. With PATH > 1, it fits instead the path of
# PATH penalties from LAMBDA_MAX down to LAMBDA, evenly spaced in log (as
# glmnet's documentation advises: warm starts), and writes the last one's
# coefficients. FAMILY "gaussian" minimizes
# (1/2n)||y - b - Xw||^2 + lambda*||w||_1, "binomial" (labels > 0 are the
# positive class) (1/n) sum log(1 + exp(-y_i (b + x_i w))) + lambda*||w||_1.
# It prints its own timings as "key value" lines.
t_start <- proc.time()[["elapsed"]]
suppressPackageStartupMessages({
  library(Matrix)
  library(glmnet)
})

read_libsvm <- function(path, p) {
  raw <- readBin(path, what = "raw", n = file.size(path))
  colon <- raw == as.raw(58L)
  newline <- which(raw == as.raw(10L))
  if (length(newline) == 0L || newline[length(newline)] != length(raw)) {
    raw <- c(raw, as.raw(10L))
    newline <- c(newline, length(raw))
  }
  per_row <- diff(c(0L, findInterval(newline, which(colon))))
  raw[colon] <- as.raw(32L)
  con <- rawConnection(raw)
  v <- scan(con, what = double(), quiet = TRUE)
  close(con)
  n <- length(newline)
  start <- cumsum(c(1L, 1L + 2L * per_row))[seq_len(n)]
  y <- v[start]
  is_label <- logical(length(v))
  is_label[start] <- TRUE
  pairs <- v[!is_label]
  j <- as.integer(pairs[c(TRUE, FALSE)])
  x <- pairs[c(FALSE, TRUE)]
  i <- rep.int(seq_len(n), per_row)
  list(x = sparseMatrix(i = i, j = j, x = x, dims = c(n, p)), y = y, nnz = length(x))
}

args <- commandArgs(trailingOnly = TRUE)
family <- args[1]
p <- as.integer(args[3])
lambda <- as.numeric(args[4])
intercept <- args[5] == "1"
thresh <- as.numeric(args[6])
out <- args[7]
path <- if (length(args) >= 9) as.integer(args[8]) else 0L
lambdas <- lambda
if (path > 1L) {
  lambdas <- exp(seq(log(as.numeric(args[9])), log(lambda), length.out = path))
  glmnet.control(fdev = 0, devmax = 1)  # no early end of the path
}
t_import <- proc.time()[["elapsed"]]
d <- read_libsvm(args[2], p)
x <- d$x
dense <- d$nnz > 0.5 * nrow(x) * p
if (dense) x <- as.matrix(x)
y <- d$y
if (family == "binomial") y <- factor(as.integer(y > 0), levels = c(0L, 1L))
t_load <- proc.time()[["elapsed"]]
fit <- glmnet(x, y, family = family, lambda = lambdas, standardize = FALSE,
              intercept = intercept, thresh = thresh, maxit = 1e7)
t_fit <- proc.time()[["elapsed"]]
if (length(fit$lambda) != length(lambdas)) stop("glmnet stopped the path early at lambda ", min(fit$lambda))
beta <- as.numeric(as.matrix(coef(fit))[, length(lambdas)])  # intercept first
keep <- which(beta != 0)
idx <- keep - 1L
if (!intercept) {
  keep <- keep[idx != 0L]
  idx <- keep - 1L
}
writeLines(c("index,value", sprintf("%d,%.17g", idx, beta[keep])), out)
t_write <- proc.time()[["elapsed"]]
cat(sprintf("import_s %.6f\nload_s %.6f\nfit_s %.6f\nwrite_s %.6f\n",
            t_import - t_start, t_load - t_import, t_fit - t_load, t_write - t_fit))
cat(sprintf("dense %d\nnpasses %d\njerr %d\npath %d\n", as.integer(dense), as.integer(fit$npasses), as.integer(fit$jerr), length(lambdas)))
