"""Tier 4: small algorithms: BFS on a grid, flood fill, 1-D and 2-D dynamic programming, graphs."""

from __future__ import annotations

from random import Random

from codeloop.tasks.curriculum.family import Family, Params, ints, joined, sized_list

_BIG = "The answer fits in a 64-bit signed integer."


def grid_path(data: str, p: dict) -> str:
    from collections import deque

    lines = data.split()
    rows, cols = int(lines[0]), int(lines[1])
    grid = lines[2 : 2 + rows]
    if grid[0][0] == "#" or grid[rows - 1][cols - 1] == "#":
        return "-1"
    dist = {(0, 0): 0}
    queue = deque([(0, 0)])
    while queue:
        r, c = queue.popleft()
        if (r, c) == (rows - 1, cols - 1):
            return str(dist[(r, c)])
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nr, nc = r + dr, c + dc
            if 0 <= nr < rows and 0 <= nc < cols and grid[nr][nc] == "." and (nr, nc) not in dist:
                dist[(nr, nc)] = dist[(r, c)] + 1
                queue.append((nr, nc))
    return "-1"


def islands(data: str, p: dict) -> str:
    lines = data.split()
    rows, cols = int(lines[0]), int(lines[1])
    grid = [list(row) for row in lines[2 : 2 + rows]]
    count = 0
    for r in range(rows):
        for c in range(cols):
            if grid[r][c] != "#":
                continue
            count += 1
            stack = [(r, c)]
            grid[r][c] = "."
            while stack:
                y, x = stack.pop()
                for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                    if 0 <= ny < rows and 0 <= nx < cols and grid[ny][nx] == "#":
                        grid[ny][nx] = "."
                        stack.append((ny, nx))
    return str(count)


def lis_length(data: str, p: dict) -> str:
    values = [int(x) for x in data.split()[1:]]
    best = [1] * len(values)
    for i in range(len(values)):
        for j in range(i):
            if values[j] < values[i]:
                best[i] = max(best[i], best[j] + 1)
    return str(max(best))


def min_coins(data: str, p: dict) -> str:
    tokens = [int(x) for x in data.split()]
    n = tokens[0]
    coins, amount = tokens[1 : n + 1], tokens[n + 1]
    inf = amount + 1
    best = [0] + [inf] * amount
    for value in range(1, amount + 1):
        for coin in coins:
            if coin <= value and best[value - coin] + 1 < best[value]:
                best[value] = best[value - coin] + 1
    return str(best[amount] if best[amount] < inf else -1)


def coin_ways(data: str, p: dict) -> str:
    tokens = [int(x) for x in data.split()]
    n = tokens[0]
    coins, amount = tokens[1 : n + 1], tokens[n + 1]
    ways = [1] + [0] * amount
    for coin in coins:
        for value in range(coin, amount + 1):
            ways[value] += ways[value - coin]
    return str(ways[amount])


def stairs(data: str, p: dict) -> str:
    n = int(data.split()[0])
    ways = [1] + [0] * n
    for i in range(1, n + 1):
        ways[i] = sum(ways[i - s] for s in range(1, p["k"] + 1) if i - s >= 0)
    return str(ways[n])


def house_robber(data: str, p: dict) -> str:
    take, skip = 0, 0
    for x in data.split()[1:]:
        take, skip = skip + int(x), max(take, skip)
    return str(max(take, skip))


def edit_distance(data: str, p: dict) -> str:
    a, b = data.split()[:2]
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        previous, row[0] = row[0], i
        for j in range(1, len(b) + 1):
            current = row[j]
            row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] != b[j - 1]))
            previous = current
    return str(row[len(b)])


def lcs_length(data: str, p: dict) -> str:
    a, b = data.split()[:2]
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    return str(table[len(a)][len(b)])


def knapsack(data: str, p: dict) -> str:
    tokens = [int(x) for x in data.split()]
    n, capacity = tokens[0], tokens[1]
    best = [0] * (capacity + 1)
    for i in range(n):
        weight, value = tokens[2 + 2 * i], tokens[3 + 2 * i]
        for c in range(capacity, weight - 1, -1):
            best[c] = max(best[c], best[c - weight] + value)
    return str(best[capacity])


def max_subarray(data: str, p: dict) -> str:
    values = [int(x) for x in data.split()[1:]]
    best = current = values[0]
    for x in values[1:]:
        current = max(x, current + x)
        best = max(best, current)
    return str(best)


def topo_order(data: str, p: dict) -> str:
    import heapq

    tokens = [int(x) for x in data.split()]
    n, m = tokens[0], tokens[1]
    edges = [[] for _ in range(n + 1)]
    indegree = [0] * (n + 1)
    for i in range(m):
        u, v = tokens[2 + 2 * i], tokens[3 + 2 * i]
        edges[u].append(v)
        indegree[v] += 1
    ready = [v for v in range(1, n + 1) if indegree[v] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        u = heapq.heappop(ready)
        order.append(u)
        for v in edges[u]:
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, v)
    return " ".join(str(v) for v in order)


def components(data: str, p: dict) -> str:
    tokens = [int(x) for x in data.split()]
    n, m = tokens[0], tokens[1]
    parent = list(range(n + 1))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i in range(m):
        parent[find(tokens[2 + 2 * i])] = find(tokens[3 + 2 * i])
    return str(len({find(v) for v in range(1, n + 1)}))


def shortest_path(data: str, p: dict) -> str:
    import heapq

    tokens = [int(x) for x in data.split()]
    n, m = tokens[0], tokens[1]
    edges = [[] for _ in range(n + 1)]
    for i in range(m):
        u, v, w = tokens[2 + 3 * i : 5 + 3 * i]
        edges[u].append((v, w))
        edges[v].append((u, w))
    dist = {1: 0}
    heap = [(0, 1)]
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        for v, w in edges[u]:
            if v not in dist or d + w < dist[v]:
                dist[v] = d + w
                heapq.heappush(heap, (d + w, v))
    return str(dist.get(n, -1))


def rpn(data: str, p: dict) -> str:
    stack = []
    for token in data.split():
        if token in ("+", "-", "*"):
            b, a = stack.pop(), stack.pop()
            stack.append(a + b if token == "+" else a - b if token == "-" else a * b)
        else:
            stack.append(int(token))
    return str(stack[0])


def merge_intervals(data: str, p: dict) -> str:
    tokens = [int(x) for x in data.split()]
    pairs = sorted((tokens[1 + 2 * i], tokens[2 + 2 * i]) for i in range(tokens[0]))
    merged = [list(pairs[0])]
    for start, end in pairs[1:]:
        if start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return "\n".join(f"{start} {end}" for start, end in merged)


def min_path_sum(data: str, p: dict) -> str:
    tokens = [int(x) for x in data.split()]
    rows, cols = tokens[0], tokens[1]
    grid = [tokens[2 + r * cols : 2 + (r + 1) * cols] for r in range(rows)]
    best = [[0] * cols for _ in range(rows)]
    for r in range(rows):
        for c in range(cols):
            if r == 0 and c == 0:
                best[r][c] = grid[r][c]
            elif r == 0:
                best[r][c] = best[r][c - 1] + grid[r][c]
            elif c == 0:
                best[r][c] = best[r - 1][c] + grid[r][c]
            else:
                best[r][c] = min(best[r - 1][c], best[r][c - 1]) + grid[r][c]
    return str(best[rows - 1][cols - 1])


def window_sum(data: str, p: dict) -> str:
    tokens = [int(x) for x in data.split()]
    n = tokens[0]
    values, k = tokens[1 : n + 1], tokens[n + 1]
    return str(max(sum(values[i : i + k]) for i in range(n - k + 1)))


def lower_bound(data: str, p: dict) -> str:
    import bisect

    tokens = [int(x) for x in data.split()]
    n = tokens[0]
    values = tokens[1 : n + 1]
    q = tokens[n + 1]
    return "\n".join(str(bisect.bisect_left(values, x)) for x in tokens[n + 2 : n + 2 + q])


def _cells(rng: Random, p: Params, wall: float) -> str:
    rows, cols = rng.randint(1, p["size"]), rng.randint(1, p["size"])
    lines = ["".join("#" if rng.random() < wall else "." for _ in range(cols)) for _ in range(rows)]
    return f"{rows} {cols}\n" + "\n".join(lines) + "\n"


def _coins(rng: Random, p: Params) -> str:
    coins = sorted(set(ints(rng, rng.randint(1, 4), 2, 12)))
    return f"{len(coins)}\n{joined(coins)}\n{rng.randint(0, p['amount'])}\n"


def _two_words(rng: Random, p: Params) -> str:
    def one() -> str:
        return "".join(rng.choice(p["letters"]) for _ in range(rng.randint(1, 8)))

    return f"{one()} {one()}\n"


def _items(rng: Random, p: Params) -> str:
    n = rng.randint(1, 6)
    items = [f"{rng.randint(1, 10)} {rng.randint(1, 50)}" for _ in range(n)]
    return f"{n} {rng.randint(1, p['capacity'])}\n" + "\n".join(items) + "\n"


def _dag(rng: Random, p: Params) -> str:
    n = rng.randint(1, 7)
    labels = rng.sample(range(1, n + 1), n)
    edges = {
        (labels[i], labels[j])
        for i in range(n)
        for j in range(i + 1, n)
        if rng.random() < p["density"]
    }
    lines = [f"{u} {v}" for u, v in sorted(edges)]
    return f"{n} {len(lines)}\n" + "".join(line + "\n" for line in lines)


def _graph(rng: Random, p: Params, weighted: bool = False) -> str:
    n = rng.randint(1, 8)
    edges = []
    for _ in range(rng.randint(0, p["edges"])):
        u, v = rng.randint(1, n), rng.randint(1, n)
        edges.append(f"{u} {v} {rng.randint(1, 20)}" if weighted else f"{u} {v}")
    return f"{n} {len(edges)}\n" + "".join(edge + "\n" for edge in edges)


def _rpn(rng: Random, p: Params) -> str:
    tokens, depth = [], 0
    for _ in range(rng.randint(1, p["ops"])):
        tokens.append(str(rng.randint(0, 20)))
        depth += 1
        while depth >= 2 and rng.random() < 0.6:
            tokens.append(rng.choice("+-*"))
            depth -= 1
    tokens.extend(rng.choice("+-*") for _ in range(depth - 1))
    return " ".join(tokens) + "\n"


def _intervals(rng: Random, p: Params) -> str:
    pairs = []
    for _ in range(rng.randint(1, 6)):
        start = rng.randint(0, p["span"])
        pairs.append(f"{start} {start + rng.randint(0, 10)}")
    return f"{len(pairs)}\n" + "\n".join(pairs) + "\n"


def _number_grid(rng: Random, p: Params) -> str:
    rows, cols = rng.randint(1, 5), rng.randint(1, 5)
    lines = [joined(ints(rng, cols, 0, p["high"])) for _ in range(rows)]
    return f"{rows} {cols}\n" + "\n".join(lines) + "\n"


def _window(rng: Random, p: Params) -> str:
    values = ints(rng, rng.randint(1, 10), -50, 50)
    return f"{len(values)}\n{joined(values)}\n{rng.randint(1, len(values))}\n"


def _queries(rng: Random, p: Params) -> str:
    values = sorted(ints(rng, rng.randint(1, 9), -p["high"], p["high"]))
    queries = ints(rng, rng.randint(1, 5), -p["high"] - 2, p["high"] + 2)
    return f"{len(values)}\n{joined(values)}\n{len(queries)}\n{joined(queries)}\n"


_GRID_INPUT = (
    "Read from standard input a line with two integers r and c, then r lines of c characters, "
    "each '.' (open) or '#' ({hash})."
)

FAMILIES: list[Family] = [
    Family(
        "grid-path", 4, "Shortest path in a grid",
        params=lambda rng: {"size": rng.choice([4, 7])},
        statement=lambda p: _GRID_INPUT.format(hash="wall") + " Moving one step up, down, left "
        "or right through open cells, print only the fewest steps from the top-left cell to the "
        "bottom-right cell, or -1 if it cannot be reached (or either cell is a wall).",
        generate=lambda rng, p: _cells(rng, p, 0.25),
        solve=grid_path,
    ),
    Family(
        "islands", 4, "Count islands",
        params=lambda rng: {"size": rng.choice([4, 7])},
        statement=lambda p: _GRID_INPUT.format(hash="land") + " Land cells that touch up, down, "
        "left or right belong to one island. Print only the number of islands.",
        generate=lambda rng, p: _cells(rng, p, 0.45),
        solve=islands,
    ),
    Family(
        "lis-length", 4, "Longest increasing subsequence",
        params=lambda rng: {"high": rng.choice([10, 100])},
        statement=lambda p: "Read from standard input a line with n, then a line with n "
        "integers. Print only the length of the longest strictly increasing subsequence (not "
        "necessarily contiguous).",
        generate=lambda rng, p: sized_list(rng, -p["high"], p["high"], 1, 12),
        solve=lis_length,
    ),
    Family(
        "min-coins", 4, "Fewest coins",
        params=lambda rng: {"amount": rng.choice([30, 100])},
        statement=lambda p: "Read from standard input a line with n, a line with n distinct coin "
        "values, and a line with an amount A (0 <= A). Using any number of coins of each value, "
        "print only the fewest coins whose values add up to exactly A, or -1 if impossible.",
        generate=_coins,
        solve=min_coins,
    ),
    Family(
        "coin-ways", 4, "Ways to pay an amount",
        params=lambda rng: {"amount": rng.choice([30, 100])},
        statement=lambda p: "Read from standard input a line with n, a line with n distinct coin "
        "values, and a line with an amount A (0 <= A). Using any number of coins of each value, "
        "print only the number of different ways (ignoring order) to make exactly A. " + _BIG,
        generate=_coins,
        solve=coin_ways,
    ),
    Family(
        "stairs", 4, "Climbing stairs",
        params=lambda rng: {"k": rng.choice([2, 3])},
        statement=lambda p: "Read one integer n (0 <= n <= 40) from standard input: the number "
        f"of stairs. Each move climbs between 1 and {p['k']} stairs. Print only the number of "
        f"different move sequences that reach exactly stair n. {_BIG}",
        generate=lambda rng, p: f"{rng.randint(0, 40)}\n",
        solve=stairs,
    ),
    Family(
        "house-robber", 4, "Best sum without neighbours",
        params=lambda rng: {"high": rng.choice([10, 100])},
        statement=lambda p: "Read from standard input a line with n, then a line with n "
        "non-negative integers. Choose positions so that no two chosen positions are next to "
        "each other. Print only the largest possible sum of the chosen values (0 if you choose "
        "none).",
        generate=lambda rng, p: sized_list(rng, 0, p["high"], 1, 12),
        solve=house_robber,
    ),
    Family(
        "edit-distance", 4, "Edit distance",
        params=lambda rng: {"letters": rng.choice(["ab", "abc", "abcdef"])},
        statement=lambda p: "Read two lowercase words a and b from standard input (on one line, "
        "separated by a space). Print only the fewest single-letter insertions, deletions and "
        "substitutions that turn a into b.",
        generate=_two_words,
        solve=edit_distance,
    ),
    Family(
        "lcs-length", 4, "Longest common subsequence",
        params=lambda rng: {"letters": rng.choice(["ab", "abc", "abcd"])},
        statement=lambda p: "Read two lowercase words a and b from standard input (on one line, "
        "separated by a space). Print only the length of their longest common subsequence.",
        generate=_two_words,
        solve=lcs_length,
    ),
    Family(
        "knapsack", 4, "0/1 knapsack",
        params=lambda rng: {"capacity": rng.choice([15, 40])},
        statement=lambda p: "Read from standard input a line with n and a capacity W, then n "
        "lines each with an item's weight and value. Using each item at most once and a total "
        "weight of at most W, print only the largest possible total value.",
        generate=_items,
        solve=knapsack,
    ),
    Family(
        "max-subarray", 4, "Maximum subarray sum",
        params=lambda rng: {"high": rng.choice([10, 100])},
        statement=lambda p: "Read from standard input a line with n, then a line with n "
        "integers. Print only the largest sum of a non-empty run of consecutive integers.",
        generate=lambda rng, p: sized_list(rng, -p["high"], p["high"], 1, 12),
        solve=max_subarray,
    ),
    Family(
        "topo-order", 4, "Topological order",
        params=lambda rng: {"density": rng.choice([0.2, 0.5])},
        statement=lambda p: "Read from standard input a line with n and m, then m lines each "
        "with u and v: task u must come before task v (tasks are 1 to n, there is no cycle). "
        "Print only the order of all n tasks that respects every rule and is smallest in "
        "dictionary order (always take the smallest available task next), on one line "
        "separated by single spaces.",
        generate=_dag,
        solve=topo_order,
    ),
    Family(
        "components", 4, "Connected components",
        params=lambda rng: {"edges": rng.choice([4, 8])},
        statement=lambda p: "Read from standard input a line with n and m, then m lines each "
        "with two vertices u and v (1 to n) joined by an undirected edge (an edge may repeat or "
        "join a vertex to itself). Print only the number of connected components of the graph.",
        generate=_graph,
        solve=components,
    ),
    Family(
        "shortest-path", 4, "Weighted shortest path",
        params=lambda rng: {"edges": rng.choice([6, 12])},
        statement=lambda p: "Read from standard input a line with n and m, then m lines each "
        "with u, v and w: an undirected road of length w between vertices u and v (1 to n; a "
        "road may repeat or join a vertex to itself). "
        "Print only the length of the shortest route from vertex 1 to vertex n, or -1 if there "
        "is none.",
        generate=lambda rng, p: _graph(rng, p, weighted=True),
        solve=shortest_path,
    ),
    Family(
        "rpn", 4, "Reverse Polish notation",
        params=lambda rng: {"ops": rng.choice([3, 6])},
        statement=lambda p: "Read one line from standard input: an expression in reverse Polish "
        "notation, tokens separated by single spaces; tokens are non-negative integers and the "
        f"operators +, - and *. Print only the value of the expression. {_BIG}",
        generate=_rpn,
        solve=rpn,
    ),
    Family(
        "merge-intervals", 4, "Merge intervals",
        params=lambda rng: {"span": rng.choice([20, 60])},
        statement=lambda p: "Read from standard input a line with n, then n lines each with two "
        "integers l and r (l <= r), a closed interval. Merge intervals that overlap or touch at "
        "an end point. Print only the merged intervals in increasing order, one per line as l r.",
        generate=_intervals,
        solve=merge_intervals,
    ),
    Family(
        "min-path-sum", 4, "Cheapest grid path",
        params=lambda rng: {"high": rng.choice([9, 99])},
        statement=lambda p: "Read from standard input a line with r and c, then r lines of c "
        "non-negative integers. Moving only right or down from the top-left cell to the "
        "bottom-right cell, print only the smallest possible sum of the cells visited "
        "(both ends included).",
        generate=_number_grid,
        solve=min_path_sum,
    ),
    Family(
        "window-sum", 4, "Best window",
        params=lambda rng: {"v": rng.randint(0, 9)},
        statement=lambda p: "Read from standard input a line with n, a line with n integers, and "
        "a line with k (1 <= k <= n). Print only the largest sum of k consecutive integers.",
        generate=_window,
        solve=window_sum,
    ),
    Family(
        "lower-bound", 4, "Binary search queries",
        params=lambda rng: {"high": rng.choice([10, 1000])},
        statement=lambda p: "Read from standard input a line with n, a line with n integers in "
        "non-decreasing order, a line with q, and a line with q query integers. For each query "
        "x print only, on its own line, the number of list values smaller than x.",
        generate=_queries,
        solve=lower_bound,
    ),
]  # fmt: skip
