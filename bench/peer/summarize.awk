# bench/peer/figures.sh's lines ("FIGURE WHO ROUND VALUE", in round order) to a markdown table: a
# row per figure and kvd variant, each side's median with every value in the order measured, and
# kvd's median over llama.cpp's where both ran. WHO is kvd, llama.cpp, or kvd_<variant> (a kvd row
# of its own against the figure's llama.cpp values).
function median(list,    n, v, i, j, t) {
  n = split(list, v, " ")
  for (i = 2; i <= n; ++i) {
    for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; --j) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
  }
  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
# "median (v1, v2, ...)" of a space-separated list, or "-".
function cell(list,    n, v, i, out) {
  if (list == "") return "-"
  n = split(list, v, " ")
  out = ""
  for (i = 1; i <= n; ++i) out = out (i > 1 ? ", " : "") sprintf("%.1f", v[i])
  return sprintf("%.1f (%s)", median(list), out)
}
NF == 4 && $4 ~ /^[0-9.]+$/ {
  key = $1 SUBSEP $2
  values[key] = (key in values) ? values[key] " " $4 : $4
  if ($2 != "llama.cpp" && !(key in listed)) {
    listed[key] = 1
    rows[++row_count] = key
  }
}
END {
  print "| figure | kvd | llama.cpp | kvd / llama.cpp |"
  print "|---|---:|---:|---:|"
  for (i = 1; i <= row_count; ++i) {
    split(rows[i], part, SUBSEP)
    figure = part[1]; who = part[2]
    ours = values[rows[i]]
    theirs = (figure SUBSEP "llama.cpp") in values ? values[figure SUBSEP "llama.cpp"] : ""
    label = figure (who == "kvd" ? "" : " (" substr(who, 5) ")")
    ratio = (theirs != "" && median(theirs) > 0) \
        ? sprintf("%.2f", median(ours) / median(theirs)) : "-"
    printf "| %s | %s | %s | %s |\n", label, cell(ours), cell(theirs), ratio
  }
}
