# Exports the bladder cancer gene expression data of Debian's
# r-bioc-bladderbatch (Bioconductor's bladderbatch: 57 Affymetrix arrays x
# 22,283 probe sets, RMA log2 expression) to LIBSVM.
#
# usage: Rscript export_bladder.R DIR
#
# Every gene is centered (its mean over the 57 samples subtracted), so that
# the fits without an intercept make sense too; the scale (log2) is kept.
# DIR/bladder.svm has labels 1 for the 40 cancer samples and 0 for the 17
# others (9 biopsies, 8 normal): the Lasso reads them as a 0/1 response,
# L1-logistic regression as two classes.
suppressPackageStartupMessages(library(bladderbatch))
data(bladderdata)
x <- t(Biobase::exprs(bladderEset))
x <- sweep(x, 2, colMeans(x))
y <- as.integer(Biobase::pData(bladderEset)$cancer == "Cancer")
out <- file.path(commandArgs(trailingOnly = TRUE)[1], "bladder.svm")
tmp <- paste0(out, ".tmp")
idx <- seq_len(ncol(x))
lines <- vapply(seq_len(nrow(x)), function(i) {
  v <- x[i, ]
  nz <- v != 0
  paste(c(y[i], sprintf("%d:%.17g", idx[nz], v[nz])), collapse = " ")
}, "")
writeLines(lines, tmp)
invisible(file.rename(tmp, out))
