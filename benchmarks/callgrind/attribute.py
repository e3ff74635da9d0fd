#!/usr/bin/env python3
"""Instructions per request in a callgrind dump of connection-path-count: in all, by assembly, and by method.

Usage: attribute.py DUMP --requests N --perf-map FILE --maps FILE [--r2r-map FILE] [--top N]

DUMP is the part callgrind wrote at cg_dump (run with --dump-instr=yes). Callgrind cannot name .NET code; three maps do:
the runtime's perf-PID.map names JIT-compiled code (DOTNET_PerfMapEnabled=3), the process's /proc/self/maps says which
image holds an address, and crossgen2's map of a composite ReadyToRun image (--mapcsv, its MethodWithGCInfo rows as
RVA,length,symbol) names the methods compiled ahead. What none names is 'unnamed' (the runtime's stubs) or, for native
code, the symbol callgrind gives. Prints the total, the instructions per request by assembly and kind of code, then
the TOP methods by their own (exclusive) instructions per request.
"""
import argparse
import bisect
import collections
import re


class Ranges:
    """Sorted, non-overlapping (start, length, name) ranges, looked up by address."""

    def __init__(self, rows):
        self.rows = sorted(rows)
        self.starts = [r[0] for r in self.rows]

    def find(self, address):
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0 and address < self.rows[i][0] + self.rows[i][1]:
            return self.rows[i][2]
        return None


def load_ranges(path, separator, size_base):
    """Lines of start, size and name: the runtime's perf map ('start size name', both hex) or the compiled methods of
    crossgen2's map ('rva,length,symbol', the length decimal)."""
    rows = []
    with open(path) as f:
        for line in f:
            start, size, name = line.rstrip('\n').split(separator, 2)
            rows.append((int(start, 16), int(size, size_base), name))
    return Ranges(rows)


def load_images(path):
    """The mapped assemblies (.dll files) as (start, end, file offset, file name)."""
    images = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5].endswith('.dll'):
                start, end = (int(x, 16) for x in parts[0].split('-'))
                images.append((start, end, int(parts[2], 16), parts[5].rsplit('/', 1)[-1]))
    return images


def self_costs(path):
    """Exclusive Ir by (function, instruction address). Positions are 'instr line'; an address is absolute (0x...),
    relative (+N, -N) or the same as before (*); the line after calls= is the call's inclusive cost, not the caller's
    own."""
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


def assembly_of_symbol(symbol):
    """crossgen2's symbols start with the assembly's name, then the type's namespace, which mostly repeats it
    (HeaderCache_HeaderCache_Compaction_...); CoreLib's is S_P_CoreLib."""
    if symbol.startswith('S_P_CoreLib_'):
        return 'System.Private.CoreLib'
    tokens = symbol.split('_')
    for k in range(1, min(8, len(tokens) // 2) + 1):
        if tokens[k:2 * k] == tokens[:k]:
            return '.'.join(tokens[:k])
    return 'other'


def r2r_base(costs, image_ranges, r2r):
    """The address the composite image's RVAs count from: of its mappings from file offset 0, the one under which the
    most counted instructions fall inside a method."""
    inside = [(address, cost) for (_, address), cost in costs.items()
              if any(s <= address < e for s, e, _ in image_ranges)]
    best, best_hits = None, -1
    for base in sorted({start for start, end, offset in image_ranges if offset == 0}):
        hits = sum(cost for address, cost in inside if r2r.find(address - base))
        if hits > best_hits:
            best, best_hits = base, hits
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('dump')
    parser.add_argument('--requests', type=int, required=True)
    parser.add_argument('--perf-map', required=True)
    parser.add_argument('--maps', required=True)
    parser.add_argument('--r2r-map')
    parser.add_argument('--top', type=int, default=40)
    args = parser.parse_args()

    costs = self_costs(args.dump)
    perf_map = load_ranges(args.perf_map, ' ', 16)
    images = load_images(args.maps)
    r2r = load_ranges(args.r2r_map, ',', 10) if args.r2r_map else None
    composite = [(s, e, o) for s, e, o, name in images if name.endswith('.r2r.dll')]
    base = r2r_base(costs, composite, r2r) if r2r and composite else None

    by_method = collections.Counter()
    by_kind = collections.Counter()
    for (function, address), cost in costs.items():
        name = perf_map.find(address)
        if name:
            assembly = re.search(r'\[([^\]]+)\] ', name)
            kind = f'JIT-compiled, {assembly.group(1) if assembly else "stubs"}'
        else:
            image = next((file for start, end, _, file in images if start <= address < end), None)
            symbol = r2r.find(address - base) if base is not None and image and image.endswith('.r2r.dll') else None
            if symbol:
                name, kind = symbol, f'compiled ahead, {assembly_of_symbol(symbol)}'
            elif image:
                name = kind = f'compiled ahead, in {image}'
            elif function.startswith('0x') or function == 'unnamed':
                name = kind = 'unnamed'
            else:
                name, kind = function, 'native'
        by_method[name] += cost
        by_kind[kind] += cost

    total = sum(by_method.values())
    print(f'{total / args.requests:.0f} instructions per request ({total} for {args.requests} requests)')
    print()
    for kind, cost in by_kind.most_common(16):
        print(f'{cost / args.requests:9.1f} {100 * cost / total:5.1f} %  {kind}')
    print()
    for name, cost in by_method.most_common(args.top):
        print(f'{cost / args.requests:9.1f} {100 * cost / total:5.1f} %  {name}')


if __name__ == '__main__':
    main()
