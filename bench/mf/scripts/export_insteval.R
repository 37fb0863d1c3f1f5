# Writes lme4's InstEval (Debian r-cran-lme4) as a ratings file, lines
# "student lecturer rating": 73,421 ratings of 1,128 lecturers by 2,972
# students, 1 to 5. Usage: Rscript bench/mf/scripts/export_insteval.R OUT
args <- commandArgs(trailingOnly = TRUE)
data(InstEval, package = "lme4")
d <- InstEval
write.table(data.frame(as.integer(as.character(d$s)), as.integer(as.character(d$d)), as.integer(as.character(d$y))),
            args[1], row.names = FALSE, col.names = FALSE)
