//! Sharing configurations up to topology symmetry: the search space of the
//! simulator's oracle and the candidates of AToM's competition
//! (docs/architecture.md, Topology: "two placements that a topology automorphism maps onto
//! each other are one sharing configuration", Tang et al. Table 2).
//!
//! A *raw placement* says how many threads of each app run on each CPU (the
//! threads of one app are alike, so which of them sits where does not matter).
//! The topology tree's automorphisms permute isomorphic siblings (two L3s of a
//! socket, two sockets); a *configuration* is an orbit of raw placements under
//! them. Each is represented by its canonical form (children sorted by their own
//! canonical forms, Aho-Hopcroft-Ullman tree canonization), laid out on the
//! leaves in a fixed order, so that it maps back to concrete CPUs.
//!
//! - **Counting** does not enumerate: the configurations of a subtree for a
//!   given vector of per-app thread counts are, for each class of `m`
//!   interchangeable children, the multisets of `m` child configurations whose
//!   vectors add up — a knapsack over child vectors where `k` copies chosen
//!   from `n` child configurations of one vector count C(n+k−1, k) ways. Raw
//!   placements are the N-fold convolution of one CPU's possibilities.
//! - **Enumeration** (exhaustive search) generates each canonical configuration
//!   once: children of one class take non-increasing (vector, form) items.
//! - **Canonicalization** (sampled search) maps any raw placement to the key of
//!   its configuration, so sampled duplicates are evaluated once.
//!
//! Vectors of per-app counts below a target `t` are indexed in mixed radix
//! (digit i in 0..=t_i), which is linear: index(a) − index(b) = index(a − b)
//! whenever a ≥ b digit by digit.

use std::collections::HashMap;
use std::rc::Rc;

use super::{ObjId, ObjKind, Topology};
use crate::cpuset::Cpu;

/// Largest vector space (product of (threads + 1) over apps) the counting
/// tables are built for; beyond it the space is searched without a count.
const MAX_RADIX: usize = 1 << 18;

/// A subtree shape: what is interchangeable with what.
#[derive(Clone, Debug)]
struct Shape {
    /// Child shapes, one entry per class of interchangeable children, with
    /// how many children the class has.
    classes: Vec<(usize, usize)>,
    /// CPUs (leaves) below.
    cpus: usize,
}

#[derive(Clone, Debug)]
struct Node {
    shape: usize,
    /// Per class of the shape, the child nodes of that class in topology order.
    classes: Vec<Vec<usize>>,
}

/// The topology reduced to what symmetry needs: a tree of shapes whose leaves
/// are CPUs. Single-child chains (an L3 with one NUMA node, a core with one
/// PU) are merged, their labels concatenated.
#[derive(Clone, Debug)]
pub struct SymTree {
    shapes: Vec<Shape>,
    nodes: Vec<Node>,
    root: usize,
    /// CPU of each leaf, in layout order: class by class, recursively. Every
    /// placement in this module is a per-leaf list of count vectors in this order.
    pub leaves: Vec<Cpu>,
}

/// Per-app thread counts on one CPU, or in one subtree.
pub type Counts = Vec<u16>;

/// The configurations of one shape for one vector, each a per-leaf layout.
type Forms = Rc<Vec<Rc<[u16]>>>;

/// A placement's canonical form ([`SymTree::canonical`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Canonical {
    /// Equal for two placements exactly when a topology automorphism maps one
    /// onto the other.
    pub key: Vec<u16>,
    /// The placement with every node's children in canonical order.
    pub layout: Vec<u16>,
    /// Raw placements in the configuration.
    pub orbit: f64,
}

fn factorial(n: usize) -> f64 {
    (1..=n).map(|k| k as f64).product()
}

impl SymTree {
    pub fn new(topo: &Topology) -> Self {
        let mut b = Builder {
            topo,
            interned: HashMap::new(),
            shapes: Vec::new(),
            nodes: Vec::new(),
            leaves: Vec::new(),
        };
        let root = b.build(0);
        SymTree {
            shapes: b.shapes,
            nodes: b.nodes,
            root,
            leaves: b.leaves,
        }
    }
}

struct Builder<'a> {
    topo: &'a Topology,
    interned: HashMap<(String, Vec<(usize, usize)>), usize>,
    shapes: Vec<Shape>,
    nodes: Vec<Node>,
    leaves: Vec<Cpu>,
}

impl Builder<'_> {
    /// The label that makes two objects different even with the same subtree.
    fn label(&self, o: ObjId) -> String {
        let obj = &self.topo.objects[o];
        format!(
            "{:?}{:?}{:?}",
            obj.kind,
            obj.cache.map(|c| (c.level, c.size_bytes)),
            obj.name
        )
    }

    /// Object `o` and its single-child descendants collapsed into one node:
    /// their labels joined, and the object where the chain branches or ends.
    fn chain(&self, o: ObjId) -> (String, ObjId) {
        let mut label = String::new();
        let mut cur = o;
        while self.topo.objects[cur].children.len() == 1 {
            label.push_str(&self.label(cur));
            cur = self.topo.objects[cur].children[0];
        }
        label.push_str(&self.label(cur));
        (label, cur)
    }

    /// Builds the node for object `o`; leaves are pushed in layout order.
    fn build(&mut self, o: ObjId) -> usize {
        let (label, cur) = self.chain(o);
        let obj = &self.topo.objects[cur];
        if obj.children.is_empty() {
            let cpu = match obj.kind {
                ObjKind::Pu => obj.os_index.unwrap_or(self.leaves.len() as Cpu),
                _ => obj.cpus.first().unwrap_or(self.leaves.len() as Cpu),
            };
            self.leaves.push(cpu);
            let shape = self.intern(label, Vec::new(), 1);
            self.nodes.push(Node {
                shape,
                classes: Vec::new(),
            });
            return self.nodes.len() - 1;
        }
        // Children are built class by class so that leaves come out in layout
        // order: first find each child's shape without recording leaves.
        let children = obj.children.clone();
        let shapes: Vec<usize> = children.iter().map(|&c| self.shape_of(c)).collect();
        let mut order: Vec<usize> = Vec::new();
        for s in &shapes {
            if !order.contains(s) {
                order.push(*s);
            }
        }
        order.sort_unstable();
        let mut classes = Vec::new();
        let mut class_nodes = Vec::new();
        let mut cpus = 0;
        for s in order {
            let members: Vec<ObjId> = children
                .iter()
                .zip(&shapes)
                .filter(|(_, cs)| **cs == s)
                .map(|(c, _)| *c)
                .collect();
            let nodes: Vec<usize> = members.iter().map(|&c| self.build(c)).collect();
            cpus += self.shapes[s].cpus * nodes.len();
            classes.push((s, nodes.len()));
            class_nodes.push(nodes);
        }
        let shape = self.intern(label, classes, cpus);
        self.nodes.push(Node {
            shape,
            classes: class_nodes,
        });
        self.nodes.len() - 1
    }

    /// The shape of object `o`'s subtree, without recording nodes or leaves.
    fn shape_of(&mut self, o: ObjId) -> usize {
        let (label, cur) = self.chain(o);
        let children = self.topo.objects[cur].children.clone();
        if children.is_empty() {
            return self.intern(label, Vec::new(), 1);
        }
        let mut classes: Vec<(usize, usize)> = Vec::new();
        for c in children {
            let s = self.shape_of(c);
            match classes.iter_mut().find(|(k, _)| *k == s) {
                Some((_, n)) => *n += 1,
                None => classes.push((s, 1)),
            }
        }
        classes.sort_unstable();
        let cpus = classes.iter().map(|&(s, n)| self.shapes[s].cpus * n).sum();
        self.intern(label, classes, cpus)
    }

    fn intern(&mut self, label: String, classes: Vec<(usize, usize)>, cpus: usize) -> usize {
        let key = (label, classes.clone());
        if let Some(&id) = self.interned.get(&key) {
            return id;
        }
        self.shapes.push(Shape { classes, cpus });
        self.interned.insert(key, self.shapes.len() - 1);
        self.shapes.len() - 1
    }
}

/// Mixed-radix indexing of the count vectors at or below a target.
#[derive(Clone, Debug)]
struct Radix {
    target: Counts,
    stride: Vec<usize>,
    size: usize,
    /// Digits of every index, flattened (index-major).
    digits: Vec<u16>,
    /// Digit sum of every index.
    sum: Vec<u32>,
}

impl Radix {
    fn new(target: &[u16]) -> Option<Self> {
        let mut stride = Vec::with_capacity(target.len());
        let mut size = 1usize;
        for &t in target {
            stride.push(size);
            size = size.checked_mul(usize::from(t) + 1)?;
        }
        if size > MAX_RADIX {
            return None;
        }
        let mut digits = Vec::with_capacity(size * target.len());
        for mut i in 0..size {
            for &t in target {
                digits.push((i % (usize::from(t) + 1)) as u16);
                i /= usize::from(t) + 1;
            }
        }
        let sum = digits
            .chunks(target.len().max(1))
            .map(|d| d.iter().map(|&x| u32::from(x)).sum())
            .take(size)
            .collect();
        Some(Radix {
            target: target.to_vec(),
            stride,
            size,
            digits,
            sum,
        })
    }

    fn digits(&self, i: usize) -> &[u16] {
        let k = self.target.len();
        &self.digits[i * k..(i + 1) * k]
    }

    fn index(&self, v: &[u16]) -> usize {
        v.iter()
            .zip(&self.stride)
            .map(|(&d, &s)| usize::from(d) * s)
            .sum()
    }

    /// Whether `a ≥ k·b` digit by digit; then `a − k·b` is `a − k·index(b)`
    /// (the index is linear in the vector).
    fn fits(&self, a: usize, b: usize, k: u16) -> bool {
        self.digits(a)
            .iter()
            .zip(self.digits(b))
            .all(|(&x, &y)| x >= k * y)
    }

    /// The largest k with `a ≥ k·b` digit by digit ([`Self::fits`]), for a
    /// non-zero `b`: what the dense knapsack the tests check [`multisets`]
    /// against reads.
    #[cfg(test)]
    fn times(&self, a: usize, b: usize) -> usize {
        self.digits(a)
            .iter()
            .zip(self.digits(b))
            .filter(|&(_, &y)| y > 0)
            .map(|(&x, &y)| usize::from(x / y))
            .min()
            .unwrap_or(usize::MAX)
    }

    /// Writes into `out` the indices of every vector at or above `u` digit
    /// by digit (and at or below the target), `u` first.
    fn at_least(&self, u: usize, out: &mut Vec<usize>) {
        out.clear();
        let base = self.digits(u);
        let room: Vec<u16> = self.target.iter().zip(base).map(|(&t, &d)| t - d).collect();
        let mut add = vec![0u16; room.len()];
        let mut v = u;
        loop {
            out.push(v);
            // Odometer over the digits added to u, lowest first.
            let mut i = 0;
            loop {
                if i == room.len() {
                    return;
                }
                if add[i] < room[i] {
                    add[i] += 1;
                    v += self.stride[i];
                    break;
                }
                v -= usize::from(add[i]) * self.stride[i];
                add[i] = 0;
                i += 1;
            }
        }
    }

    /// Whether `a ≥ k·b` digit by digit ([`Self::fits`] without its `u16`
    /// product), read from digit sums as [`Self::adds_times`] reads them: a
    /// borrow in a − k·b adds its digit's target to the digit sum.
    fn holds(&self, a: usize, b: usize, k: usize) -> bool {
        let kb = k * b;
        self.adds_times(0, b, k) && a >= kb && self.sum[a - kb] + self.sum[kb] == self.sum[a]
    }

    /// Whether `a + k·b` stays at or below the target digit by digit. The
    /// indices add like the vectors exactly when no digit passes its target
    /// (the index is linear); a digit that does carries into the next, which
    /// takes that digit's target off the digit sum (a digit whose target is
    /// 0 never carries itself), or past the last digit, out of the index
    /// range. So the digit sums tell, two lookups instead of a pass over
    /// the digits (the class tables ask at every entry they gather;
    /// docs/simulator.md, Speed).
    fn adds_times(&self, a: usize, b: usize, k: usize) -> bool {
        let v = a + k * b;
        v < self.size && self.sum[v] == self.sum[a] + k as u32 * self.sum[b]
    }

    /// Whether `a + b` stays at or below the target digit by digit.
    fn adds(&self, a: usize, b: usize) -> bool {
        self.adds_times(a, b, 1)
    }

    /// Indices of the non-zero entries of a table.
    fn nonzero(table: &[f64]) -> Vec<usize> {
        (0..table.len()).filter(|&i| table[i] != 0.0).collect()
    }
}

/// C(n + k − 1, k): multisets of size k from n kinds.
fn multichoose(n: f64, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, j| acc * (n + j as f64) / (j + 1) as f64)
}

/// The space of one thread-count target: counts, enumeration and sampling.
#[derive(Debug)]
pub struct Space<'t> {
    tree: &'t SymTree,
    /// Threads of each app.
    pub target: Counts,
    /// Threads one CPU may hold (1 unless the apps have more threads than CPUs).
    pub per_cpu: u16,
    radix: Option<Radix>,
    /// Configurations per (shape, vector index), built on demand.
    tables: HashMap<usize, Rc<Vec<f64>>>,
    /// Multiset tables per (shape, class): dp[slots][vector].
    class_tables: HashMap<(usize, usize), Rc<Vec<Vec<f64>>>>,
    forms: HashMap<(usize, usize), Forms>,
}

impl<'t> Space<'t> {
    pub fn new(tree: &'t SymTree, target: Counts) -> Self {
        let threads: usize = target.iter().map(|&t| usize::from(t)).sum();
        let per_cpu = threads.div_ceil(tree.leaves.len()).max(1) as u16;
        Space {
            radix: Radix::new(&target),
            tree,
            target,
            per_cpu,
            tables: HashMap::new(),
            class_tables: HashMap::new(),
            forms: HashMap::new(),
        }
    }

    /// Number of sharing configurations; None when the space is too large to
    /// build counting tables for.
    pub fn configurations(&mut self) -> Option<f64> {
        let r = self.radix.clone()?;
        let top = r.index(&self.target);
        let root = self.tree.nodes[self.tree.root].shape;
        match self.tree.shapes[root].classes[..] {
            [(child, m)] if !self.tables.contains_key(&root) => {
                Some(self.top_count(&r, child, m, top))
            }
            _ => Some(self.table(root)[top]),
        }
    }

    /// `table(root)[top]` for a root whose children are one class of `m`
    /// children of shape `child` (every built-in platform's machine: its
    /// packages), computing only the entries of the class table that entry
    /// depends on. An entry of row s at v is needed only if the m − s
    /// children still to come can make up top − v, so only if the digit sum
    /// of v is at least that of top less m − s times the largest digit sum
    /// a child holds: the last row needs top alone, the one before it the
    /// vectors of the upper digit sums. The entries computed are computed
    /// as the whole table computes them (the same terms in the same order,
    /// and the terms of a needed entry are needed entries), so the count is
    /// the same to the bit (test
    /// `the_count_of_a_one_class_root_is_its_tables_top_entry`); the
    /// oracle counts its space once per DoP split (docs/simulator.md, Speed).
    fn top_count(&mut self, r: &Radix, child: usize, m: usize, top: usize) -> f64 {
        let child_table = self.table(child);
        let most = (1..r.size)
            .filter(|&u| child_table[u] != 0.0)
            .map(|u| r.sum[u])
            .max()
            .unwrap_or(0);
        let total = r.sum[top];
        let floor: Vec<u32> = (0..=m)
            .map(|s| total.saturating_sub((m - s) as u32 * most))
            .collect();
        let dp = multisets(r, &child_table, m, &floor);
        // Padded as `class_table` pads: exactly m children, the rest empty.
        (1..=m).fold(dp[0][top], |padded, s| dp[s][top] + padded)
    }

    /// Number of raw placements: the N-fold convolution (N CPUs) of what one
    /// CPU may hold (a sparse table: vectors of at most `per_cpu` threads).
    pub fn raw_placements(&self) -> Option<f64> {
        let r = self.radix.as_ref()?;
        let leaf: Vec<f64> = (0..r.size)
            .map(|i| f64::from(u8::from(r.sum[i] <= u32::from(self.per_cpu))))
            .collect();
        let mut acc = vec![0.0; r.size];
        acc[0] = 1.0;
        for _ in 0..self.tree.leaves.len() {
            acc = convolve(r, &acc, &leaf);
        }
        Some(acc[r.index(&self.target)])
    }

    fn table(&mut self, shape: usize) -> Rc<Vec<f64>> {
        if let Some(t) = self.tables.get(&shape) {
            return t.clone();
        }
        let s = self.tree.shapes[shape].clone();
        let r = self.radix.clone().expect("tables only exist with a radix");
        let cap = u32::from(self.per_cpu) * s.cpus as u32;
        let table = if s.classes.is_empty() {
            (0..r.size)
                .map(|i| f64::from(u8::from(r.sum[i] <= cap)))
                .collect()
        } else {
            let mut acc: Option<Vec<f64>> = None;
            for c in 0..s.classes.len() {
                let dp = self.class_table(shape, c);
                let full = dp[s.classes[c].1].clone();
                acc = Some(match acc {
                    None => full,
                    Some(a) => convolve(&r, &a, &full),
                });
            }
            acc.unwrap_or_default()
        };
        let t = Rc::new(table);
        self.tables.insert(shape, t.clone());
        t
    }

    /// dp[s][v]: multisets of `s` children of class `c` of `shape` whose count
    /// vectors add up to v (empty children included, so dp[s] covers exactly
    /// `s` children).
    fn class_table(&mut self, shape: usize, c: usize) -> Rc<Vec<Vec<f64>>> {
        if let Some(t) = self.class_tables.get(&(shape, c)) {
            return t.clone();
        }
        let (child, m) = self.tree.shapes[shape].classes[c];
        let child_table = self.table(child);
        let r = self.radix.clone().expect("tables only exist with a radix");
        let mut dp = multisets(&r, &child_table, m, &vec![0; m + 1]);
        // Pad with empty children: exactly s children, the rest empty.
        for s in 1..=m {
            let (lo, hi) = dp.split_at_mut(s);
            for (v, x) in hi[0].iter_mut().enumerate() {
                *x += lo[s - 1][v];
            }
        }
        let t = Rc::new(dp);
        self.class_tables.insert((shape, c), t.clone());
        t
    }

    /// Every configuration, canonical and once each, as per-leaf count vectors
    /// flattened (leaf-major, app-minor). Only for spaces with a count.
    pub fn enumerate(&mut self) -> Vec<Rc<[u16]>> {
        let Some(r) = self.radix.clone() else {
            return Vec::new();
        };
        let root = self.tree.nodes[self.tree.root].shape;
        self.forms_of(root, r.index(&self.target)).to_vec()
    }

    fn forms_of(&mut self, shape: usize, v: usize) -> Forms {
        if let Some(f) = self.forms.get(&(shape, v)) {
            return f.clone();
        }
        let r = self.radix.clone().expect("enumeration needs a radix");
        let s = self.tree.shapes[shape].clone();
        let out: Vec<Rc<[u16]>> = if self.table(shape)[v] == 0.0 {
            Vec::new()
        } else if s.classes.is_empty() {
            vec![r.digits(v).into()]
        } else {
            let mut out = Vec::new();
            self.splits(shape, &r, 0, v, Vec::new(), &mut out);
            out
        };
        let f = Rc::new(out);
        self.forms.insert((shape, v), f.clone());
        f
    }

    /// Splits `v` over the classes of `shape` from class `c` on, appending the
    /// product of each split's class enumerations to `out`.
    fn splits(
        &mut self,
        shape: usize,
        r: &Radix,
        c: usize,
        v: usize,
        prefix: Vec<u16>,
        out: &mut Vec<Rc<[u16]>>,
    ) {
        let classes = self.tree.shapes[shape].classes.len();
        if c + 1 == classes {
            for tail in self.class_forms(shape, c, v) {
                let mut f = prefix.clone();
                f.extend_from_slice(&tail);
                out.push(f.into());
            }
            return;
        }
        for u in 0..=v {
            if !r.fits(v, u, 1)
                || self.class_table(shape, c)[self.tree.shapes[shape].classes[c].1][u] == 0.0
            {
                continue;
            }
            for head in self.class_forms(shape, c, u) {
                let mut p = prefix.clone();
                p.extend_from_slice(&head);
                self.splits(shape, r, c + 1, v - u, p, out);
            }
        }
    }

    /// The multisets of class `c`'s children adding up to `v`, each laid out as
    /// its children's forms in non-increasing (vector, form) order.
    fn class_forms(&mut self, shape: usize, c: usize, v: usize) -> Vec<Vec<u16>> {
        let (child, m) = self.tree.shapes[shape].classes[c];
        let r = self.radix.clone().expect("enumeration needs a radix");
        let dp = self.class_table(shape, c);
        // Items in decreasing order: (vector, form index), the empty child last.
        let mut items: Vec<(usize, Rc<[u16]>)> = Vec::new();
        for u in (0..=v).rev() {
            if r.fits(v, u, 1) {
                for f in self.forms_of(child, u).iter() {
                    items.push((u, f.clone()));
                }
            }
        }
        let mut out = Vec::new();
        let mut chosen: Vec<usize> = Vec::new();
        choose(&r, &dp, &items, 0, m, v, &mut chosen, &mut out);
        out
    }
}

/// Picks `slots` more items at index `from` or later (non-increasing order)
/// adding up to `v`, pruning remainders no `slots` children can hold.
#[allow(clippy::too_many_arguments)]
fn choose(
    r: &Radix,
    dp: &[Vec<f64>],
    items: &[(usize, Rc<[u16]>)],
    from: usize,
    slots: usize,
    v: usize,
    chosen: &mut Vec<usize>,
    out: &mut Vec<Vec<u16>>,
) {
    if slots == 0 {
        if v == 0 {
            out.push(
                chosen
                    .iter()
                    .flat_map(|&i| items[i].1.iter().copied())
                    .collect(),
            );
        }
        return;
    }
    if dp[slots][v] == 0.0 {
        return;
    }
    for i in from..items.len() {
        let u = items[i].0;
        if !r.fits(v, u, 1) {
            continue;
        }
        chosen.push(i);
        choose(r, dp, items, i, slots - 1, v - u, chosen, out);
        chosen.pop();
    }
}

/// dp[s][v]: multisets of `s` non-empty children, of up to `m`, whose
/// vectors add up to v, where `child[u]` children have vector u: a knapsack
/// over the child vectors u, where k copies of u chosen from n = child[u]
/// count C(n + k − 1, k) ways.
///
/// For each u, row s (from the top, so that it reads rows below s that
/// have not taken u yet) gains, at every v ≥ k·u digit by digit,
/// Σ_{k=1..s} dp[s − k][v − k·u]·C(n + k − 1, k), summed in k order and
/// added once. Each term is gathered whichever way visits fewest entries:
/// from the non-zero entries w of row s − k (v = w + k·u, kept at or below
/// the target), over every v ≥ u, skipping zeros, or, for a row computed
/// only above a floor, over the v of that row. Early in the knapsack the
/// rows are sparse and the vectors above u many (row 0 has one entry),
/// late it is the other way round. Every way adds the same non-zero terms
/// to each v in the same order, so the table is the same to the last bit
/// whichever way each was gathered (docs/simulator.md, Speed).
///
/// Row s is computed only at the v whose digit sum is at least `floor[s]`
/// (0 everywhere for the whole table; [`Space::top_count`]), the others
/// left at 0.
fn multisets(r: &Radix, child: &[f64], m: usize, floor: &[u32]) -> Vec<Vec<f64>> {
    let mut dp = vec![vec![0.0; r.size]; m + 1];
    dp[0][0] = 1.0;
    // The indices of each row's non-zero entries, in no order (an entry
    // never returns to zero: every term is positive).
    let mut nonzero: Vec<Vec<usize>> = vec![Vec::new(); m + 1];
    nonzero[0].push(0);
    // The vectors at or above u, and the positions among them of those
    // holding two children of u or more: listed only when a dense pass
    // needs them (their number is a product of the digits' room).
    let mut above = Vec::new();
    let mut twice: Vec<usize> = Vec::new();
    let mut choose = Vec::with_capacity(m + 1);
    // Per v, this row's sum of terms so far, and the v that have one.
    let mut add = vec![0.0; r.size];
    let mut touched: Vec<usize> = Vec::new();
    // Per row with a floor, the v it is computed at: when fewer than the
    // vectors above u, the terms are gathered over these instead (the last
    // row of a count has one).
    let needed: Vec<Vec<usize>> = floor
        .iter()
        .map(|&f| match f {
            0 => Vec::new(),
            f => (0..r.size).filter(|&v| r.sum[v] >= f).collect(),
        })
        .collect();
    for u in 1..r.size {
        let n = child[u];
        if n == 0.0 {
            continue;
        }
        let room: usize = r
            .target
            .iter()
            .zip(r.digits(u))
            .map(|(&t, &d)| usize::from(t - d) + 1)
            .product();
        above.clear();
        twice.clear();
        choose.clear();
        choose.extend((0..=m).map(|k| multichoose(n, k)));
        for s in (1..=m).rev() {
            touched.clear();
            for k in 1..=s {
                // k·u past the target: no v holds k children of vector u,
                // nor more.
                if !r.adds_times(0, u, k) {
                    break;
                }
                let (rows, row) = (&dp[..s], s - k);
                let by_floor = floor[s] > 0 && needed[s].len() < room;
                let dense = if by_floor { needed[s].len() } else { room };
                if nonzero[row].len() <= dense {
                    for &w in &nonzero[row] {
                        if r.adds_times(w, u, k) && r.sum[w + k * u] >= floor[s] {
                            gather(&mut add, &mut touched, w + k * u, rows[row][w] * choose[k]);
                        }
                    }
                    continue;
                }
                if by_floor {
                    for &v in needed[s].iter().filter(|&&v| r.holds(v, u, k)) {
                        let rest = rows[row][v - k * u];
                        if rest != 0.0 {
                            gather(&mut add, &mut touched, v, rest * choose[k]);
                        }
                    }
                    continue;
                }
                if above.is_empty() {
                    r.at_least(u, &mut above);
                }
                if k == 1 {
                    for &v in above.iter().filter(|&&v| r.sum[v] >= floor[s]) {
                        let rest = rows[row][v - u];
                        if rest != 0.0 {
                            gather(&mut add, &mut touched, v, rest * choose[1]);
                        }
                    }
                    continue;
                }
                if twice.is_empty() {
                    twice.extend((0..above.len()).filter(|&i| r.holds(above[i], u, 2)));
                }
                for &i in twice
                    .iter()
                    .filter(|&&i| r.holds(above[i], u, k) && r.sum[above[i]] >= floor[s])
                {
                    let v = above[i];
                    let rest = rows[row][v - k * u];
                    if rest != 0.0 {
                        gather(&mut add, &mut touched, v, rest * choose[k]);
                    }
                }
            }
            for &v in &touched {
                if dp[s][v] == 0.0 {
                    nonzero[s].push(v);
                }
                dp[s][v] += add[v];
                add[v] = 0.0;
            }
        }
    }
    dp
}

/// Adds one term to v's sum ([`multisets`]), noting v the first time.
fn gather(add: &mut [f64], touched: &mut Vec<usize>, v: usize, term: f64) {
    if add[v] == 0.0 {
        touched.push(v);
    }
    add[v] += term;
}

/// (a * b)[v] = Σ_{u + w = v} a[u]·b[w], over the non-zero entries only.
fn convolve(r: &Radix, a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; r.size];
    let nb = Radix::nonzero(b);
    for u in Radix::nonzero(a) {
        for &w in &nb {
            // The indices add like the vectors as long as no digit passes its target.
            if r.adds(u, w) {
                out[u + w] += a[u] * b[w];
            }
        }
    }
    out
}

impl SymTree {
    /// The canonical form of a placement (per-leaf count vectors, flattened in
    /// layout order): the same key and layout for every placement of one
    /// configuration, and how many raw placements the configuration stands
    /// for (its orbit: at each class, m! / ∏ k! arrangements of m children of
    /// which k at a time are identical, times the children's own orbits).
    pub fn canonical(&self, apps: usize, placement: &[u16]) -> Canonical {
        self.canon(self.root, apps, placement, &mut 0)
    }

    fn canon(&self, node: usize, apps: usize, p: &[u16], leaf: &mut usize) -> Canonical {
        let n = &self.nodes[node];
        if n.classes.is_empty() {
            let v = p[*leaf * apps..(*leaf + 1) * apps].to_vec();
            *leaf += 1;
            return Canonical {
                key: v.clone(),
                layout: v,
                orbit: 1.0,
            };
        }
        let mut out = Canonical {
            key: vec![u16::MAX, n.shape as u16],
            layout: Vec::new(),
            orbit: 1.0,
        };
        for class in &n.classes {
            let mut kids: Vec<Canonical> = class
                .iter()
                .map(|&c| self.canon(c, apps, p, leaf))
                .collect();
            kids.sort_by(|a, b| b.key.cmp(&a.key));
            out.orbit *= factorial(kids.len());
            let mut run = 0;
            for (i, k) in kids.iter().enumerate() {
                run += 1;
                if i + 1 == kids.len() || kids[i + 1].key != k.key {
                    out.orbit /= factorial(run);
                    run = 0;
                }
            }
            for k in kids {
                out.orbit *= k.orbit;
                out.key.extend(k.key);
                out.layout.extend(k.layout);
            }
            out.key.push(u16::MAX - 1);
        }
        out
    }

    /// Leaves in scatter order: one leaf from each top-level group in turn,
    /// recursively (the leaf's path from the root read backwards), so that
    /// filling leaves in this order spreads every app over the whole machine.
    pub fn scatter_order(&self) -> Vec<usize> {
        let mut paths = Vec::new();
        self.paths(self.root, &mut Vec::new(), &mut paths);
        let mut order: Vec<usize> = (0..paths.len()).collect();
        order.sort_by(|&a, &b| paths[a].iter().rev().cmp(paths[b].iter().rev()));
        order
    }

    fn paths(&self, node: usize, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        let n = &self.nodes[node];
        if n.classes.is_empty() {
            out.push(prefix.clone());
            return;
        }
        for (i, &c) in n.classes.iter().flatten().enumerate() {
            prefix.push(i);
            self.paths(c, prefix, out);
            prefix.pop();
        }
    }

    /// The placement rendered as nested groups, empty subtrees left out: apps
    /// are letters, a group of CPUs prints its counts (`[a2 b4]`), a group of
    /// groups nests them (`{[a6] [a2 b4]}`).
    pub fn render(&self, apps: usize, placement: &[u16]) -> String {
        let mut leaf = 0;
        let s = self.render_node(self.root, apps, placement, &mut leaf);
        if s.is_empty() {
            "(empty)".into()
        } else {
            s
        }
    }

    fn render_node(&self, node: usize, apps: usize, p: &[u16], leaf: &mut usize) -> String {
        let n = &self.nodes[node];
        if n.classes.is_empty() {
            let v = &p[*leaf * apps..(*leaf + 1) * apps];
            *leaf += 1;
            return counts_text(v);
        }
        let all_leaves = n
            .classes
            .iter()
            .flatten()
            .all(|&c| self.nodes[c].classes.is_empty());
        if all_leaves {
            let cpus = n.classes.iter().map(Vec::len).sum::<usize>();
            let mut total = vec![0u16; apps];
            for l in 0..cpus {
                for (a, t) in total.iter_mut().enumerate() {
                    *t += p[(*leaf + l) * apps + a];
                }
            }
            *leaf += cpus;
            let text = counts_text(&total);
            return if text.is_empty() {
                text
            } else {
                format!("[{text}]")
            };
        }
        let parts: Vec<String> = n
            .classes
            .iter()
            .flatten()
            .map(|&c| self.render_node(c, apps, p, leaf))
            .filter(|s| !s.is_empty())
            .collect();
        match parts.len() {
            0 => String::new(),
            1 if node != self.root => parts[0].clone(),
            _ if node == self.root => parts.join(" "),
            _ => format!("{{{}}}", parts.join(" ")),
        }
    }
}

/// `a2 b4` for counts (2, 4); apps are letters a..z then a1..
fn counts_text(v: &[u16]) -> String {
    v.iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(a, c)| format!("{}{c}", app_letter(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The letter standing for app `a` in rendered configurations.
pub fn app_letter(a: usize) -> String {
    let letter = char::from(b'a' + (a % 26) as u8);
    if a < 26 {
        letter.to_string()
    } else {
        format!("{letter}{}", a / 26)
    }
}

#[cfg(test)]
mod tests;
