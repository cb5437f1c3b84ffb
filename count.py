import glob, re
tot = same = 0
for f in sorted(glob.glob("out/p_*.py.tensordict.out")):
    a = [l for l in open(f) if not l.startswith("rc=")]
    b = [l for l in open(f.replace("tensordict.out", "tclass.out")) if not l.startswith("rc=")]
    key = lambda l: l.split(": ", 1)[0]
    da = {key(l): re.sub(r"0x[0-9a-f]+", "", l) for l in a}; db = {key(l): re.sub(r"0x[0-9a-f]+", "", l) for l in b}
    names = set(da) | set(db)
    s = sum(da.get(n) == db.get(n) for n in names)
    print(f, len(names), s, sorted(n for n in names if da.get(n) != db.get(n)))
    tot += len(names); same += s
print("total", tot, "same", same)
