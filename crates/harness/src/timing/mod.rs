//! What `coloc bench sim`, `bench decide` and `bench nupoco` measure, as
//! data the CLI renders (docs/architecture.md, Conventions: performance
//! figures come from commands that print them, never from timed tests):
//! the simulator's speed ([`sim`]), every policy's decision time on the
//! fixture topologies ([`decide`]) and the cost of NuPoCo's decisions at
//! NuPoCo's scale ([`nupoco`]). Nothing here asserts a speed; each figure
//! carries the CPU time or the count it was taken over.

pub mod decide;
pub mod nupoco;
pub mod sim;
