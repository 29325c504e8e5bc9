#!/usr/bin/env python3
"""Where an app's threads ran against where their pages are, from a coloc trace.

    crates/sim/scripts/trace-locality.py [--window T0 T1] TRACE...

Per app of each trace.jsonl: the share of its threads' run time spent on a
memory node other than the one each thread was first observed on, how often
a thread changed node between observations, LLC misses per second of run
time, and the threads counted by their first node. First touch puts a
thread's private pages where it first ran and the simulator moves no pages
(docs/simulator.md, The engine, Memory), so the first observed node stands
for where its pages are: an approximation, since a thread can move between
its creation and the first observation. --window counts only observations
in [T0, T1) seconds. Used for docs/simulator.md (ReSense Table VI, Why
`scalability` is slow).
"""
import collections
import json
import sys


def parse_cpus(text):
    cpus = []
    for part in text.split(','):
        if '-' in part:
            lo, hi = part.split('-')
            cpus += range(int(lo), int(hi) + 1)
        elif part:
            cpus.append(int(part))
    return cpus


def analyse(path, window):
    node_of, names, first, last = {}, {}, {}, {}
    # per app: run ns, run ns away from the first node, node changes, misses
    totals = collections.defaultdict(lambda: [0, 0, 0, 0])
    for line in open(path):
        e = json.loads(line)
        if e['event'] == 'header':
            apps = e['workload']['apps']
            for o in e['topology']['objects']:
                if o['kind'] == 'numa_node':
                    for c in parse_cpus(o['cpus']):
                        node_of[c] = o['os_index']
        elif e['event'] == 'start':
            names[(e['app']['app'], e['app']['rep'])] = apps[e['app']['app']]['name']
        elif e['event'] == 'obs':
            t = e['at'] / 1e9
            counted = window is None or window[0] <= t < window[1]
            for a in e['apps']:
                name = names.get((a['app']['app'], a['app']['rep']), '?')
                for th in a['threads']:
                    if th.get('cpu') is None:
                        continue
                    key = (name, a['app']['rep'], th['tid'])
                    node = node_of.get(th['cpu'], 0)
                    first.setdefault(key, node)
                    misses = (th.get('counters') or {}).get('llc_misses') or 0
                    run0, node0, misses0 = last.get(key, (0, node, 0))
                    if counted:
                        s = totals[name]
                        ran = th['run_ns'] - run0
                        s[0] += ran
                        s[1] += ran if node != first[key] else 0
                        s[2] += node != node0
                        s[3] += misses - misses0
                    last[key] = (th['run_ns'], node, misses)
    homes = collections.defaultdict(collections.Counter)
    for (name, _, _), node in first.items():
        homes[name][node] += 1
    return totals, homes


def main(args):
    window = None
    if args[:1] == ['--window']:
        window = (float(args[1]), float(args[2]))
        args = args[3:]
    for path in args:
        print('==', path)
        totals, homes = analyse(path, window)
        for name, (run, away, moves, misses) in sorted(totals.items()):
            if run == 0:
                continue
            secs = run / 1e9
            print(f'{name:15s} run {secs:9.2f} s  away from first node {100 * away / run:5.1f}%'
                  f'  node changes {moves:5d}  LLC misses/s of run {misses / secs:.3e}'
                  f'  threads by first node {dict(sorted(homes[name].items()))}')


if __name__ == '__main__':
    main(sys.argv[1:])
