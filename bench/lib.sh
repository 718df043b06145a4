# Shell helpers the bench scripts share; source it, do not run it.

# json_get FILE EXPR: EXPR (Python, over d) of the last JSON line of FILE.
json_get() {
  python3 -c 'import json,sys
line=[l for l in open(sys.argv[1]) if l.startswith("{")][-1]
d=json.loads(line); print(eval(sys.argv[2], {"d": d}))' "$1" "$2"
}

# median X...: the median to 2 decimals ("nan" for none).
median() {
  python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):.2f}" if v else "nan")' "$@"
}

# ratio A B [DIGITS]: A / B to DIGITS decimals (default 2; "nan" when B is 0).
ratio() {
  python3 -c 'import sys; a,b,n=float(sys.argv[1]),float(sys.argv[2]),int(sys.argv[3]); print(f"{a/b:.{n}f}" if b > 0 else "nan")' "$1" "$2" "${3:-2}"
}
