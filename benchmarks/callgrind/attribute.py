#!/usr/bin/env python3
"""Instructions per request in a callgrind dump of connection-path-count, in all and by method.

Usage: attribute.py DUMP PERF_MAP MAPS REQUESTS [TOP]

DUMP is the part callgrind wrote at cg_dump (run with --dump-instr=yes), PERF_MAP the runtime's perf-PID.map of the same
process (DOTNET_PerfMapEnabled=3), MAPS a copy of its /proc/self/maps. Callgrind cannot name JIT-compiled code, the
runtime's map can; ReadyToRun code neither names is summed by the assembly whose image holds it ('ReadyToRun code of
X.dll'), and what is left under 'unnamed' (the runtime's stubs). Prints the total, the instructions per request by
assembly and kind of code, then the TOP methods by their own (exclusive) instructions per request.
"""
import bisect
import collections
import re
import sys


def load_map(path):
    rows = []
    with open(path) as f:
        for line in f:
            start, size, name = line.rstrip('\n').split(' ', 2)
            rows.append((int(start, 16), int(size, 16), name))
    rows.sort()
    return rows, [r[0] for r in rows]


def load_images(path):
    """Address ranges of the mapped assemblies (.dll files), as (start, end, file name)."""
    images = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5].endswith('.dll'):
                start, end = (int(x, 16) for x in parts[0].split('-'))
                images.append((start, end, parts[5].rsplit('/', 1)[-1]))
    return images


def self_costs(path):
    """Exclusive Ir by (function, instruction address). Positions are 'instr line'; an address is absolute (0x...),
    relative (+N, -N) or the same as before (*); the line after calls= is the call's inclusive cost, not the caller's own."""
    names = {}
    costs = collections.Counter()
    function = 'unnamed'
    address = 0
    after_call = False
    definition = re.compile(r'c?fn=\((\d+)\)(?: (.*))?')
    with open(path) as f:
        for raw in f:
            if raw.startswith('fn=') or raw.startswith('cfn='):
                m = definition.match(raw.rstrip('\n'))
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                if raw.startswith('fn='):
                    function = names.get(m.group(1), 'unnamed')
                continue
            if raw.startswith('calls='):
                after_call = True
                continue
            if raw[0] not in '+-*0':
                continue
            parts = raw.split()
            position = parts[0]
            if position.startswith('0x'):
                address = int(position, 16)
            elif position[0] == '+':
                address += int(position[1:])
            elif position[0] == '-':
                address -= int(position[1:])
            if after_call:
                after_call = False
            elif len(parts) >= 3:
                costs[(function, address)] += int(parts[2])
    return costs


def main():
    dump, perf_map, maps, requests = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    top = int(sys.argv[5]) if len(sys.argv) > 5 else 40
    rows, starts = load_map(perf_map)
    images = load_images(maps)
    by_method = collections.Counter()
    by_kind = collections.Counter()
    for (function, address), cost in self_costs(dump).items():
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and address < rows[i][0] + rows[i][1]:
            name = rows[i][2]
            assembly = re.search(r'\[([^\]]+)\] ', name)
            by_kind[f'JIT-compiled, {assembly.group(1) if assembly else "stubs"}'] += cost
        else:
            image = next((file for start, end, file in images if start <= address < end), None)
            name = f'ReadyToRun code of {image}' if image else ('unnamed' if function.startswith('0x') else function)
            by_kind[name if image or name == 'unnamed' else 'native'] += cost
        by_method[name] += cost
    total = sum(by_method.values())
    print(f'{total / requests:.0f} instructions per request ({total} for {requests} requests)')
    print()
    for kind, cost in by_kind.most_common(12):
        print(f'{cost / requests:9.1f} {100 * cost / total:5.1f} %  {kind}')
    print()
    for name, cost in by_method.most_common(top):
        print(f'{cost / requests:9.1f} {100 * cost / total:5.1f} %  {name}')


if __name__ == '__main__':
    main()
