/*
 * knob.h: how a user operator (farmctl op add) reads its schedule knobs.
 *
 * The agent compiles a user operator's C file once per tuning candidate, with every knob of the
 * candidate defined as a macro BF_KNOB_<name> before the file: an integer knob as its number
 * (BF_KNOB_tile = 8), a string knob as its token (BF_KNOB_order = ikj) plus BF_KNOB_<name>_<value>
 * defined to 1 (BF_KNOB_order_ikj), so `#if BF_KNOB_tile >= 4` and `#ifdef BF_KNOB_order_ikj`
 * both work. The candidate's entry function (and reference) are renamed by macros, so many
 * candidates share one image: keep every other function and global `static`.
 *
 * Compiled on its own (e.g. by an IDE or a unit test), the file sees no knobs: give each a
 * default with `#ifndef BF_KNOB_tile` / `#define BF_KNOB_tile 4` / `#endif`.
 */
#ifndef BENCHFARM_OPS_KNOB_H_
#define BENCHFARM_OPS_KNOB_H_

/* The value of knob `name` in this candidate. */
#define BF_KNOB(name) BF_KNOB_##name

#endif /* BENCHFARM_OPS_KNOB_H_ */
