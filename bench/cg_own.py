"""cg_own.py — frontdoor's own instructions per command (functions under
proxy/, storage/, protocol/) and the whole process's, from bench/cg_percmd.sh's dumps
(CG_TESTS: the tests it counted, as for it)."""
import os, re, subprocess, sys, glob
N = 20000
D = sys.argv[1] if len(sys.argv) > 1 else '/tmp/cg-percmd'
def own(path):
    out = subprocess.run(['callgrind_annotate', '--inclusive=no', '--threshold=100', '--auto=no', path], capture_output=True, text=True).stdout
    total = 0; own = []
    for line in out.splitlines():
        m = re.match(r'\s*([\d,]+)\s+(\([^)]*\)\s+)?(\S+?):(\S+)', line)
        if not m: continue
        ir = int(m.group(1).replace(',', '')); f = m.group(3)
        if 'PROGRAM TOTALS' in line: continue
        total += ir
        if re.search(r'(^|/)(proxy|storage|protocol)/', f): own.append(ir)
    tot = int(re.search(r'([\d,]+)\s+(\([^)]*\)\s+)?PROGRAM TOTALS', out).group(1).replace(',', ''))
    # frames on the stack when the counters were zeroed show the whole run: not self cost
    return sum(x for x in own if x < 0.9 * tot), tot
for t in os.environ.get('CG_TESTS', 'get set').split():
    for P in ('1', '16'):
        row = []
        for tag in ('base', 'new'):
            f = glob.glob(f'{D}/cg-{tag}-{t}-{P}.*.1')[0]
            o, tot = own(f)
            row.append((o / N, tot / N))
        b, n = row
        print(f'{t.upper()} -P {P}: own {b[0]:.0f} -> {n[0]:.0f} ({(n[0]/b[0]-1)*100:+.1f} %), whole process {b[1]:.0f} -> {n[1]:.0f} ({(n[1]/b[1]-1)*100:+.1f} %)')
