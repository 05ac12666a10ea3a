/*
 * thumb.c: the Thumb decoder (thumb.h). Section numbers refer to the ARMv7-M Architecture
 * Reference Manual (ARM DDI 0403E), chapter A5 (encodings) and A6.4 (floating point).
 */
#include "thumb.h"

#include <string.h>

#define R(n) ((uint16_t)(1u << (n)))
#define S_REG(n) ((n) < 32 ? (1u << (n)) : 0u)
#define BF_PC 15
#define BF_LR 14
#define BF_SP 13

static uint32_t SignExtend(uint32_t value, int bits) {
  uint32_t sign = 1u << (bits - 1);
  return (value ^ sign) - sign;
}

static int PopCount16(uint32_t v) {
  int n = 0;
  for (v &= 0xFFFFu; v != 0u; v &= v - 1u) n++;
  return n;
}

/* Data-processing operations shared by the 16-bit and both 32-bit immediate/register forms:
 * whether the op (4-bit field) only sets flags when Rd is PC (TST, TEQ, CMN, CMP) and whether Rn
 * is absent when it is PC (MOV, MVN). */
static void DataProcessing32(uint32_t op, uint32_t s, uint32_t rn, uint32_t rd, uint16_t other,
                             bf_insn* d) {
  int test = (rd == 15u && s != 0u) && (op == 0x0u || op == 0x4u || op == 0x8u || op == 0xDu);
  int no_rn = rn == 15u && (op == 0x2u || op == 0x3u);
  d->op = BF_OP_ALU;
  if (op == 0x6u) d->op = BF_OP_DSP_ALU; /* PKHBT/PKHTB */
  d->reads = other;
  if (!no_rn) d->reads |= R(rn);
  if (!test) d->writes = R(rd);
  if (!test && rd == BF_PC) d->flags |= BF_INSN_WRITES_PC;
}

/* A 16-bit load or store of register `rt` at base register `rn` plus an immediate. */
static void LoadStoreImmediate16(int load, uint32_t rn, uint32_t rt, bf_insn* d) {
  d->addr = R(rn);
  d->reads = R(rn);
  d->op = load ? BF_OP_LOAD : BF_OP_STORE;
  if (load) {
    d->writes = R(rt);
  } else {
    d->reads |= R(rt);
  }
}

static void Decode16(uint32_t hw, uint32_t pc, bf_insn* d) {
  uint32_t rd3 = hw & 7u, rm3 = (hw >> 3) & 7u;
  d->size = 2;
  if ((hw >> 14) == 0u) {
    /* A5.2.1 shift (immediate), add, subtract, move, compare. */
    uint32_t op5 = hw >> 11;
    d->op = BF_OP_ALU;
    if (op5 <= 2u) {
      d->reads = R(rm3);
      d->writes = R(rd3);
    } else if (op5 == 3u) {
      d->reads = R(rm3);
      if ((hw & 0x400u) == 0u) d->reads |= R((hw >> 6) & 7u);
      d->writes = R(rd3);
    } else {
      uint32_t rdn = (hw >> 8) & 7u;
      uint32_t op = (hw >> 11) & 3u;
      if (op != 0u) d->reads = R(rdn);
      if (op != 1u) d->writes = R(rdn);
    }
  } else if ((hw >> 10) == 0x10u) {
    /* A5.2.2 data processing (register). */
    uint32_t opc = (hw >> 6) & 0xFu;
    d->op = opc == 0xDu ? BF_OP_MUL : BF_OP_ALU;
    d->reads = R(rm3);
    if (opc != 0x9u && opc != 0xFu) d->reads |= R(rd3); /* RSB #0 and MVN read Rm only */
    if (opc != 0x8u && opc != 0xAu && opc != 0xBu) d->writes = R(rd3);
  } else if ((hw >> 10) == 0x11u) {
    /* A5.2.3 special data processing, branch and exchange. */
    uint32_t opc = (hw >> 8) & 3u;
    uint32_t rdn = ((hw >> 4) & 8u) | rd3;
    uint32_t rm = (hw >> 3) & 0xFu;
    d->op = BF_OP_ALU;
    d->reads = R(rm);
    if (opc == 0u) {
      d->reads |= R(rdn);
      d->writes = R(rdn);
    } else if (opc == 1u) {
      d->reads |= R(rdn);
    } else if (opc == 2u) {
      d->writes = R(rdn);
    } else {
      d->op = BF_OP_BRANCH_REG;
      d->flags |= BF_INSN_WRITES_PC;
      if (hw & 0x80u) {
        d->flags |= BF_INSN_LINK;
        d->writes = R(BF_LR);
      }
      return;
    }
    if (d->writes & R(BF_PC)) {
      d->op = BF_OP_BRANCH_REG;
      d->flags |= BF_INSN_WRITES_PC;
    }
  } else if ((hw >> 11) == 0x09u) {
    /* LDR (literal). */
    d->op = BF_OP_LOAD;
    d->flags |= BF_INSN_LITERAL;
    d->reads = R(BF_PC);
    d->addr = R(BF_PC);
    d->writes = R((hw >> 8) & 7u);
    d->target = ((pc + 4u) & ~3u) + ((hw & 0xFFu) << 2);
  } else if ((hw >> 12) == 0x5u) {
    /* A5.2.4 load/store single, register offset. */
    uint32_t opb = (hw >> 9) & 7u;
    uint32_t rn = rm3, rm = (hw >> 6) & 7u;
    d->addr = (uint16_t)(R(rn) | R(rm));
    d->reads = d->addr;
    if (opb <= 2u) {
      d->op = BF_OP_STORE;
      d->flags |= BF_INSN_STORE_REG_OFFSET;
      d->reads |= R(rd3);
    } else {
      d->op = BF_OP_LOAD;
      d->writes = R(rd3);
    }
  } else if ((hw >> 13) == 0x3u || (hw >> 12) == 0x8u) {
    /* STR/LDR/STRB/LDRB/STRH/LDRH (immediate). */
    LoadStoreImmediate16((hw & 0x800u) != 0u, rm3, rd3, d);
  } else if ((hw >> 12) == 0x9u) {
    /* STR/LDR (SP-relative). */
    LoadStoreImmediate16((hw & 0x800u) != 0u, BF_SP, (hw >> 8) & 7u, d);
  } else if ((hw >> 11) == 0x14u || (hw >> 11) == 0x15u) {
    /* ADR; ADD Rd, SP, #imm. */
    d->op = BF_OP_ALU;
    d->reads = (hw >> 11) == 0x14u ? R(BF_PC) : R(BF_SP);
    d->writes = R((hw >> 8) & 7u);
  } else if ((hw >> 12) == 0xBu) {
    /* A5.2.5 miscellaneous 16-bit instructions. */
    if ((hw & 0xFF00u) == 0xB000u) {
      d->op = BF_OP_ALU; /* ADD/SUB SP, SP, #imm */
      d->reads = d->writes = R(BF_SP);
    } else if ((hw & 0xF500u) == 0xB100u) {
      d->op = BF_OP_BRANCH_COND; /* CBZ, CBNZ */
      d->reads = R(rd3);
      d->target = pc + 4u + ((((hw >> 9) & 1u) << 6) | (((hw >> 3) & 0x1Fu) << 1));
      d->flags |= BF_INSN_WRITES_PC;
    } else if ((hw & 0xFF00u) == 0xB200u || (hw & 0xFF00u) == 0xBA00u) {
      d->op = BF_OP_ALU; /* SXTH, SXTB, UXTH, UXTB; REV, REV16, REVSH */
      d->reads = R(rm3);
      d->writes = R(rd3);
    } else if ((hw & 0xFE00u) == 0xB400u) {
      uint16_t list = (uint16_t)((hw & 0xFFu) | ((hw & 0x100u) ? R(BF_LR) : 0u));
      d->op = BF_OP_STORE_MULTI; /* PUSH */
      d->nregs = (uint8_t)PopCount16(list);
      d->reads = (uint16_t)(list | R(BF_SP));
      d->writes = R(BF_SP);
      d->addr = R(BF_SP);
      d->flags |= BF_INSN_WRITEBACK;
    } else if ((hw & 0xFFE8u) == 0xB660u) {
      d->op = BF_OP_SYSTEM; /* CPS */
    } else if ((hw & 0xFE00u) == 0xBC00u) {
      uint16_t list = (uint16_t)((hw & 0xFFu) | ((hw & 0x100u) ? R(BF_PC) : 0u));
      d->op = BF_OP_LOAD_MULTI; /* POP */
      d->nregs = (uint8_t)PopCount16(list);
      d->reads = R(BF_SP);
      d->writes = (uint16_t)(list | R(BF_SP));
      d->addr = R(BF_SP);
      d->flags |= BF_INSN_WRITEBACK;
      if (list & R(BF_PC)) d->flags |= BF_INSN_WRITES_PC | BF_INSN_LOADS_PC;
    } else if ((hw & 0xFF00u) == 0xBE00u) {
      d->op = BF_OP_EXCEPTION; /* BKPT */
    } else if ((hw & 0xFF00u) == 0xBF00u) {
      if ((hw & 0xFu) != 0u) {
        uint32_t mask = hw & 0xFu;
        d->op = BF_OP_IT;
        d->it_mask = (uint8_t)((mask & 1u) ? 4 : (mask & 2u) ? 3 : (mask & 4u) ? 2 : 1);
      } else {
        uint32_t hint = (hw >> 4) & 0xFu;
        d->op = (hint == 2u || hint == 3u) ? BF_OP_WAIT : BF_OP_NOP;
      }
    } else {
      d->op = BF_OP_UNKNOWN;
    }
  } else if ((hw >> 12) == 0xCu) {
    /* STM, LDM (writeback unless an LDM loads its base). */
    uint32_t rn = (hw >> 8) & 7u;
    uint16_t list = (uint16_t)(hw & 0xFFu);
    d->nregs = (uint8_t)PopCount16(list);
    d->addr = R(rn);
    if (hw & 0x800u) {
      d->op = BF_OP_LOAD_MULTI;
      d->reads = R(rn);
      d->writes = list;
      if ((list & R(rn)) == 0u) {
        d->writes |= R(rn);
        d->flags |= BF_INSN_WRITEBACK;
      }
    } else {
      d->op = BF_OP_STORE_MULTI;
      d->reads = (uint16_t)(list | R(rn));
      d->writes = R(rn);
      d->flags |= BF_INSN_WRITEBACK;
    }
  } else if ((hw >> 12) == 0xDu) {
    uint32_t cond = (hw >> 8) & 0xFu;
    if (cond >= 0xEu) {
      d->op = BF_OP_EXCEPTION; /* UDF, SVC */
    } else {
      d->op = BF_OP_BRANCH_COND;
      d->flags |= BF_INSN_WRITES_PC;
      d->target = pc + 4u + SignExtend((hw & 0xFFu) << 1, 9);
    }
  } else if ((hw >> 11) == 0x1Cu) {
    d->op = BF_OP_BRANCH;
    d->flags |= BF_INSN_WRITES_PC;
    d->target = pc + 4u + SignExtend((hw & 0x7FFu) << 1, 12);
  } else {
    d->op = BF_OP_UNKNOWN;
  }
}

/* A5.3.5 load/store multiple. */
static void LoadStoreMultiple(uint32_t hw1, uint32_t hw2, bf_insn* d) {
  uint32_t op = (hw1 >> 7) & 3u;
  uint32_t rn = hw1 & 0xFu;
  int wback = (hw1 & 0x20u) != 0u;
  uint16_t list = (uint16_t)hw2;
  if (op == 0u || op == 3u) {
    d->op = BF_OP_UNKNOWN; /* SRS/RFE: not in M profile */
    return;
  }
  d->nregs = (uint8_t)PopCount16(list);
  d->addr = R(rn);
  if (hw1 & 0x10u) {
    d->op = BF_OP_LOAD_MULTI;
    d->reads = R(rn);
    d->writes = list;
    if (list & R(BF_PC)) d->flags |= BF_INSN_WRITES_PC | BF_INSN_LOADS_PC;
  } else {
    d->op = BF_OP_STORE_MULTI;
    d->reads = (uint16_t)(list | R(rn));
  }
  if (wback) {
    d->writes |= R(rn);
    d->flags |= BF_INSN_WRITEBACK;
  }
}

/* A5.3.6 load/store dual or exclusive, table branch (and ARMv8-M load-acquire/store-release). */
static void LoadStoreDualExclusive(uint32_t hw1, uint32_t hw2, uint32_t pc, bf_insn* d) {
  uint32_t op1 = (hw1 >> 7) & 3u, op2 = (hw1 >> 4) & 3u, op3 = (hw2 >> 4) & 0xFu;
  uint32_t rn = hw1 & 0xFu, rt = (hw2 >> 12) & 0xFu, rt2 = (hw2 >> 8) & 0xFu;
  if ((op1 & 2u) != 0u || (op2 & 2u) != 0u) {
    /* LDRD/STRD: P U 1 W L. */
    int wback = (hw1 & 0x20u) != 0u;
    d->addr = R(rn);
    d->reads = R(rn);
    if (hw1 & 0x10u) {
      d->op = BF_OP_LOAD_DUAL;
      d->writes = (uint16_t)(R(rt) | R(rt2));
      if (rn == BF_PC) {
        uint32_t imm = (hw2 & 0xFFu) << 2;
        d->flags |= BF_INSN_LITERAL;
        d->target = (hw1 & 0x80u) ? ((pc + 4u) & ~3u) + imm : ((pc + 4u) & ~3u) - imm;
      }
    } else {
      d->op = BF_OP_STORE_DUAL;
      d->reads |= (uint16_t)(R(rt) | R(rt2));
    }
    d->nregs = 2;
    if (wback) {
      d->writes |= R(rn);
      d->flags |= BF_INSN_WRITEBACK;
    }
    return;
  }
  d->addr = R(rn);
  d->reads = R(rn);
  if (op1 == 0u) {
    if (op2 == 0u) { /* STREX Rd, Rt, [Rn, #imm] */
      d->op = BF_OP_STORE;
      d->reads |= R(rt);
      d->writes = R(rt2);
    } else { /* LDREX */
      d->op = BF_OP_LOAD;
      d->writes = R(rt);
    }
    return;
  }
  /* op1 == 1 */
  if (op2 == 1u && (op3 == 0u || op3 == 1u)) { /* TBB, TBH */
    uint32_t rm = hw2 & 0xFu;
    d->op = BF_OP_TABLE_BRANCH;
    d->addr = (uint16_t)(R(rn) | R(rm));
    d->reads = d->addr;
    d->flags |= BF_INSN_WRITES_PC | BF_INSN_LOADS_PC;
    return;
  }
  if (op2 == 0u) { /* STREXB/STREXH, STL*, STLEX* */
    d->op = BF_OP_STORE;
    d->reads |= R(rt);
    if (op3 >= 4u && op3 != 8u && op3 != 9u && op3 != 0xAu) d->writes = R(hw2 & 0xFu);
  } else { /* LDREXB/LDREXH, LDA*, LDAEX* */
    d->op = BF_OP_LOAD;
    d->writes = R(rt);
  }
}

/* A6.4 floating-point register numbers. */
static uint32_t SReg(uint32_t four, uint32_t one, int is_double) {
  /* Single: Sn = Vx:bit; double: Dn = bit:Vx, which covers S2n and S2n+1 (D16+: none). */
  if (is_double) {
    uint32_t dn = (one << 4) | four;
    return dn < 16u ? (3u << (2u * dn)) : 0u;
  }
  return S_REG((four << 1) | one);
}

/* Floating point: extension register load/store, data processing and register transfers. Only
 * coprocessors 10 and 11 (hw2 bits 11:9 == 101). */
static int FloatingPoint(uint32_t hw1, uint32_t hw2, uint32_t pc, bf_insn* d) {
  int dbl = (hw2 & 0x100u) != 0u;
  uint32_t vd = (hw2 >> 12) & 0xFu, bd = (hw1 >> 6) & 1u;
  uint32_t vn = hw1 & 0xFu, bn = (hw2 >> 7) & 1u;
  uint32_t vm = hw2 & 0xFu, bm = (hw2 >> 5) & 1u;
  uint32_t sd = SReg(vd, bd, dbl), sn = SReg(vn, bn, dbl), sm = SReg(vm, bm, dbl);
  if ((hw2 & 0x0E00u) != 0x0A00u) return 0;
  if (dbl) d->flags |= BF_INSN_DOUBLE;
  if ((hw1 & 0xEFE0u) == 0xEC40u) {
    /* 64-bit transfers: VMOV two core registers <-> two S registers or one D register. */
    uint32_t rt = (hw2 >> 12) & 0xFu, rt2 = hw1 & 0xFu;
    uint32_t regs = dbl ? SReg(vm, bm, 1) : (S_REG((vm << 1) | bm) | S_REG(((vm << 1) | bm) + 1u));
    d->op = BF_OP_FP_MOV_CORE2;
    if (hw1 & 0x10u) {
      d->writes = (uint16_t)(R(rt) | R(rt2));
      d->fp_reads = regs;
    } else {
      d->reads = (uint16_t)(R(rt) | R(rt2));
      d->fp_writes = regs;
    }
    return 1;
  }
  if ((hw1 & 0xEE00u) == 0xEC00u) {
    /* Extension register load/store: 1110 110P UDWL Rn. */
    uint32_t p = (hw1 >> 8) & 1u, u = (hw1 >> 7) & 1u, w = (hw1 >> 5) & 1u, l = (hw1 >> 4) & 1u;
    uint32_t rn = hw1 & 0xFu;
    uint32_t imm8 = hw2 & 0xFFu;
    d->addr = R(rn);
    d->reads = R(rn);
    if (p == 1u && w == 0u) {
      /* VLDR/VSTR */
      d->op = l ? BF_OP_FP_LOAD : BF_OP_FP_STORE;
      d->nregs = dbl ? 2 : 1;
      if (l) {
        d->fp_writes = sd;
      } else {
        d->fp_reads = sd;
      }
      if (rn == BF_PC && l) {
        d->flags |= BF_INSN_LITERAL;
        d->target = u ? ((pc + 4u) & ~3u) + (imm8 << 2) : ((pc + 4u) & ~3u) - (imm8 << 2);
      }
      return 1;
    }
    if (p == u && w == 1u) return 0; /* undefined */
    {
      /* VLDM/VSTM/VPUSH/VPOP: imm8 words; the registers from Sd (or Dd) on. */
      uint32_t words = imm8;
      uint32_t first = dbl ? 2u * ((bd << 4) | vd) : ((vd << 1) | bd);
      uint32_t regs = 0;
      uint32_t i;
      for (i = 0; i < words && first + i < 32u; i++) regs |= 1u << (first + i);
      d->op = l ? BF_OP_FP_LOAD_MULTI : BF_OP_FP_STORE_MULTI;
      d->nregs = (uint8_t)(words > 255u ? 255u : words);
      if (l) {
        d->fp_writes = regs;
      } else {
        d->fp_reads = regs;
      }
      if (w) {
        d->writes = R(rn);
        d->flags |= BF_INSN_WRITEBACK;
      }
      return 1;
    }
  }
  if ((hw1 & 0xFF00u) == 0xFE00u) {
    /* ARMv8-M FPv5 extras (VSEL, VMAXNM, VRINT*, VCVT{A,N,P,M}): one-cycle arithmetic. */
    d->op = BF_OP_FP_ALU;
    d->fp_writes = sd;
    d->fp_reads = sn | sm;
    return 1;
  }
  if ((hw1 & 0xEF00u) == 0xEE00u && (hw2 & 0x10u) == 0u) {
    /* Data processing: opc1 = hw1[7:4] (bit 6 is D), opc2 = hw1[3:0], opc3 = hw2[7:6]. */
    uint32_t opc1 = (hw1 >> 4) & 0xBu, opc2 = hw1 & 0xFu, opc3 = (hw2 >> 6) & 3u;
    d->fp_writes = sd;
    d->fp_reads = sn | sm;
    switch (opc1) {
      case 0x0u:
      case 0x1u:
        d->op = BF_OP_FP_MAC;
        d->fp_reads |= sd;
        break;
      case 0x2u:
      case 0x3u:
        d->op = BF_OP_FP_ALU;
        break;
      case 0x8u:
        d->op = BF_OP_FP_DIV;
        break;
      case 0x9u:
      case 0xAu:
        d->op = BF_OP_FP_FMA;
        d->fp_reads |= sd;
        break;
      case 0xBu:
        d->fp_reads = sm;
        if ((opc3 & 1u) == 0u) {
          d->op = BF_OP_FP_ALU; /* VMOV immediate */
          d->fp_reads = 0;
        } else if (opc2 == 1u && opc3 == 3u) {
          d->op = BF_OP_FP_SQRT;
        } else {
          d->op = BF_OP_FP_ALU; /* VMOV, VABS, VNEG, VCVT*, VCMP* */
          if (opc2 == 4u || opc2 == 5u) {
            d->fp_writes = 0; /* VCMP writes FPSCR */
            d->fp_reads |= sd;
            if (opc2 == 5u) d->fp_reads = sd; /* compare with zero */
          }
          if (opc2 == 7u || opc2 >= 8u) {
            /* conversions between precisions or to/from integers: the other side is single */
            if (opc2 == 7u) {
              d->fp_writes = dbl ? S_REG((vd << 1) | bd) : SReg(vd, bd, 1);
            } else if (opc2 >= 0xCu) {
              d->fp_writes = S_REG((vd << 1) | bd);
            } else if (opc2 == 8u) {
              d->fp_reads = S_REG((vm << 1) | bm);
            }
          }
        }
        break;
      default:
        d->op = BF_OP_FP_ALU;
        break;
    }
    return 1;
  }
  if ((hw1 & 0xEF00u) == 0xEE00u && (hw2 & 0x10u) != 0u) {
    /* 8, 16 and 32-bit transfers between core and extension registers. */
    uint32_t a = (hw1 >> 5) & 7u, l = (hw1 >> 4) & 1u, c = (hw2 >> 8) & 1u;
    uint32_t rt = (hw2 >> 12) & 0xFu;
    if (c == 0u && a == 7u) {
      d->op = BF_OP_FP_SYSTEM; /* VMSR / VMRS */
      if (l) {
        if (rt != BF_PC) d->writes = R(rt);
      } else {
        d->reads = R(rt);
      }
      return 1;
    }
    d->op = BF_OP_FP_MOV_CORE;
    {
      uint32_t s = c ? SReg(vn, bn, 1) : S_REG((vn << 1) | bn);
      if (l) {
        d->writes = R(rt);
        d->fp_reads = s;
      } else {
        d->reads = R(rt);
        d->fp_writes = s;
      }
    }
    return 1;
  }
  return 0;
}

/* A5.3.4 branches and miscellaneous control. */
static void BranchesMisc(uint32_t hw1, uint32_t hw2, uint32_t pc, bf_insn* d) {
  uint32_t op1 = (hw2 >> 12) & 7u, op = (hw1 >> 4) & 0x7Fu;
  uint32_t s = (hw1 >> 10) & 1u, j1 = (hw2 >> 13) & 1u, j2 = (hw2 >> 11) & 1u;
  if ((op1 & 5u) == 0u) {
    if ((op & 0x38u) != 0x38u) {
      uint32_t imm =
          (s << 20) | (j2 << 19) | (j1 << 18) | ((hw1 & 0x3Fu) << 12) | ((hw2 & 0x7FFu) << 1);
      d->op = BF_OP_BRANCH_COND;
      d->flags |= BF_INSN_WRITES_PC;
      d->target = pc + 4u + SignExtend(imm, 21);
      return;
    }
    if ((op & 0x7Eu) == 0x38u || (op & 0x7Eu) == 0x3Eu) {
      d->op = BF_OP_SYSTEM; /* MSR, MRS */
      if ((op & 0x7Eu) == 0x38u) {
        d->reads = R(hw1 & 0xFu);
      } else {
        d->writes = R((hw2 >> 8) & 0xFu);
      }
      return;
    }
    if (op == 0x3Au) {
      uint32_t hint = hw2 & 0xFFu;
      if ((hw2 & 0x0700u) != 0u) {
        d->op = BF_OP_SYSTEM; /* CPS.W */
      } else if (hint >= 0xC0u && hint <= 0xDFu) {
        d->op = BF_OP_MARK;
        d->mark = (uint8_t)hint;
      } else {
        d->op = (hint == 2u || hint == 3u) ? BF_OP_WAIT : BF_OP_NOP;
      }
      return;
    }
    if (op == 0x3Bu) {
      uint32_t opc = (hw2 >> 4) & 0xFu;
      d->op = (opc == 4u || opc == 5u || opc == 6u) ? BF_OP_BARRIER : BF_OP_SYSTEM;
      return;
    }
    d->op = BF_OP_UNKNOWN;
    return;
  }
  if (op1 == 2u && op == 0x7Fu) {
    d->op = BF_OP_EXCEPTION; /* UDF.W */
    return;
  }
  if ((op1 & 5u) == 1u || (op1 & 5u) == 5u) {
    uint32_t i1 = ~(j1 ^ s) & 1u, i2 = ~(j2 ^ s) & 1u;
    uint32_t imm =
        (s << 24) | (i1 << 23) | (i2 << 22) | ((hw1 & 0x3FFu) << 12) | ((hw2 & 0x7FFu) << 1);
    d->op = BF_OP_BRANCH;
    d->flags |= BF_INSN_WRITES_PC;
    d->target = pc + 4u + SignExtend(imm, 25);
    if ((op1 & 5u) == 5u) {
      d->flags |= BF_INSN_LINK;
      d->writes = R(BF_LR);
    }
    return;
  }
  if ((op1 & 5u) == 4u && (hw2 & 0x1u) != 0u) {
    /* ARMv8.1-M low-overhead loops: DLS/DLSTP (start), WLS/WLSTP (skip the loop if LR is 0),
     * LE/LETP (end: back to the start while iterations remain). Offsets: imm10:immL:'0'. */
    uint32_t offset = (((hw2 >> 1) & 0x3FFu) << 2) | (((hw2 >> 11) & 1u) << 1);
    if ((hw1 & 0xFFCFu) == 0xF00Fu && (hw2 & 0xF000u) == 0xC000u) {
      d->op = BF_OP_LOOP_END;
      d->reads = d->writes = R(BF_LR);
      d->flags |= BF_INSN_WRITES_PC;
      d->target = pc + 4u - offset;
      return;
    }
    if ((hw1 & 0xFFC0u) == 0xF040u || (hw1 & 0xFFC0u) == 0xF000u) {
      d->reads = R(hw1 & 0xFu);
      d->writes = R(BF_LR);
      if (hw2 == 0xE001u) {
        d->op = BF_OP_ALU; /* DLS, DLSTP */
        return;
      }
      if ((hw2 & 0xF000u) == 0xC000u) {
        d->op = BF_OP_BRANCH_COND; /* WLS, WLSTP */
        d->flags |= BF_INSN_WRITES_PC;
        d->target = pc + 4u + offset;
        return;
      }
    }
  }
  d->op = BF_OP_UNKNOWN; /* ARMv8.1-M branch future, BLX (immediate) */
}

/* A5.3.7-9 load byte/halfword/word (and memory hints). */
static void LoadSingle(uint32_t hw1, uint32_t hw2, uint32_t pc, bf_insn* d) {
  uint32_t rn = hw1 & 0xFu, rt = (hw2 >> 12) & 0xFu;
  uint32_t size = (hw1 >> 5) & 3u;
  d->op = BF_OP_LOAD;
  if (rn == BF_PC) {
    uint32_t imm = hw2 & 0xFFFu;
    d->flags |= BF_INSN_LITERAL;
    d->target = (hw1 & 0x80u) ? ((pc + 4u) & ~3u) + imm : ((pc + 4u) & ~3u) - imm;
    d->reads = R(BF_PC);
    d->addr = R(BF_PC);
  } else {
    d->reads = R(rn);
    d->addr = R(rn);
    if ((hw1 & 0x80u) == 0u) {
      if (hw2 & 0x800u) {
        if ((hw2 & 0x100u) != 0u && (hw2 & 0x0F00u) != 0x0E00u) { /* W set, not LDRT */
          d->writes = R(rn);
          d->flags |= BF_INSN_WRITEBACK;
        }
      } else if ((hw2 & 0xFC0u) == 0u) {
        d->reads |= R(hw2 & 0xFu);
        d->addr |= R(hw2 & 0xFu);
      }
    }
  }
  if (rt == BF_PC) {
    if (size == 2u) {
      d->flags |= BF_INSN_WRITES_PC | BF_INSN_LOADS_PC;
      d->writes |= R(BF_PC);
    } else {
      d->op = BF_OP_NOP; /* PLD, PLI */
      d->writes = 0;
    }
    return;
  }
  d->writes |= R(rt);
}

/* A5.3.10 store single data item. */
static void StoreSingle(uint32_t hw1, uint32_t hw2, bf_insn* d) {
  uint32_t rn = hw1 & 0xFu, rt = (hw2 >> 12) & 0xFu;
  d->op = BF_OP_STORE;
  d->reads = (uint16_t)(R(rn) | R(rt));
  d->addr = R(rn);
  if ((hw1 & 0x80u) == 0u) {
    if (hw2 & 0x800u) {
      if (hw2 & 0x100u) {
        d->writes = R(rn);
        d->flags |= BF_INSN_WRITEBACK;
      }
    } else {
      d->reads |= R(hw2 & 0xFu);
      d->addr |= R(hw2 & 0xFu);
      d->flags |= BF_INSN_STORE_REG_OFFSET;
    }
  }
}

/* A5.3.12 data processing (register): shifts, extends, parallel add/subtract, miscellaneous. */
static void DataProcessingRegister(uint32_t hw1, uint32_t hw2, bf_insn* d) {
  uint32_t op1 = (hw1 >> 4) & 0xFu, op2 = (hw2 >> 4) & 0xFu;
  uint32_t rn = hw1 & 0xFu, rd = (hw2 >> 8) & 0xFu, rm = hw2 & 0xFu;
  d->writes = R(rd);
  d->reads = R(rm);
  if (op1 < 8u) {
    if (op2 == 0u) {
      d->op = BF_OP_ALU; /* LSL/LSR/ASR/ROR (register) */
      d->reads |= R(rn);
    } else if (op2 & 8u) {
      /* SXTAH/SXTH, UXTAH/UXTH, SXTAB16/SXTB16, UXTAB16/UXTB16, SXTAB/SXTB, UXTAB/UXTB */
      d->op = (op1 == 2u || op1 == 3u || rn != BF_PC) ? BF_OP_DSP_ALU : BF_OP_ALU;
      if (rn != BF_PC) d->reads |= R(rn);
    } else {
      d->op = BF_OP_UNKNOWN;
    }
    return;
  }
  d->reads |= R(rn);
  if ((op2 & 8u) == 0u) {
    d->op = BF_OP_DSP_ALU; /* parallel add/subtract */
  } else if ((op1 & 0xCu) == 0x8u && (op2 & 0xCu) == 0x8u) {
    /* QADD/QDADD/QSUB/QDSUB (1000), REV/REV16/RBIT/REVSH (1001), SEL (1010), CLZ (1011) */
    d->op = (op1 == 0x9u || op1 == 0xBu) ? BF_OP_ALU : BF_OP_DSP_ALU;
  } else {
    d->op = BF_OP_UNKNOWN;
  }
}

/* A5.3.16 multiply, multiply accumulate, absolute difference. */
static void Multiply(uint32_t hw1, uint32_t hw2, bf_insn* d) {
  uint32_t op1 = (hw1 >> 4) & 7u, op2 = (hw2 >> 4) & 3u;
  uint32_t rn = hw1 & 0xFu, ra = (hw2 >> 12) & 0xFu, rd = (hw2 >> 8) & 0xFu, rm = hw2 & 0xFu;
  d->reads = (uint16_t)(R(rn) | R(rm));
  if (ra != BF_PC) d->reads |= R(ra);
  d->writes = R(rd);
  switch (op1) {
    case 0u:
      d->op = op2 == 0u   ? (ra == BF_PC ? BF_OP_MUL : BF_OP_MLA)
              : op2 == 1u ? BF_OP_MLA
                          : BF_OP_UNKNOWN;
      break;
    case 7u:
      d->op = op2 == 0u ? BF_OP_DSP_ALU : BF_OP_UNKNOWN; /* USADA8/USAD8 */
      break;
    default:
      d->op = BF_OP_DSP_MUL;
      break;
  }
}

/* A5.3.17 long multiply, long multiply accumulate, divide. */
static void LongMultiplyDivide(uint32_t hw1, uint32_t hw2, bf_insn* d) {
  uint32_t op1 = (hw1 >> 4) & 7u, op2 = (hw2 >> 4) & 0xFu;
  uint32_t rn = hw1 & 0xFu, lo = (hw2 >> 12) & 0xFu, hi = (hw2 >> 8) & 0xFu, rm = hw2 & 0xFu;
  d->reads = (uint16_t)(R(rn) | R(rm));
  if ((op1 == 1u || op1 == 3u) && op2 == 0xFu) {
    d->op = BF_OP_DIV;
    d->writes = R(hi);
    return;
  }
  d->writes = (uint16_t)(R(lo) | R(hi));
  if (op1 == 0u || op1 == 4u) d->flags |= BF_INSN_SIGNED;
  if ((op1 == 0u || op1 == 2u) && op2 == 0u) {
    d->op = BF_OP_MULL;
    return;
  }
  d->reads |= (uint16_t)(R(lo) | R(hi));
  if ((op1 == 4u || op1 == 6u) && op2 == 0u) {
    d->op = BF_OP_MLAL;
  } else if ((op1 == 4u && ((op2 & 0xCu) == 0x8u || (op2 & 0xEu) == 0xCu)) ||
             (op1 == 5u && (op2 & 0xEu) == 0xCu) || (op1 == 6u && op2 == 6u)) {
    d->op = BF_OP_DSP_MLAL; /* SMLAL<x><y>, SMLALD, SMLSLD, UMAAL */
  } else {
    d->op = BF_OP_UNKNOWN;
  }
}

static void Decode32(uint32_t hw1, uint32_t hw2, uint32_t pc, bf_insn* d) {
  uint32_t op1 = (hw1 >> 11) & 3u, op2 = (hw1 >> 4) & 0x7Fu, op = hw2 >> 15;
  d->size = 4;
  d->op = BF_OP_UNKNOWN;
  if (op1 == 1u) {
    if ((op2 & 0x64u) == 0x00u) {
      LoadStoreMultiple(hw1, hw2, d);
    } else if ((op2 & 0x64u) == 0x04u) {
      LoadStoreDualExclusive(hw1, hw2, pc, d);
    } else if ((op2 & 0x60u) == 0x20u) {
      DataProcessing32((hw1 >> 5) & 0xFu, (hw1 >> 4) & 1u, hw1 & 0xFu, (hw2 >> 8) & 0xFu,
                       R(hw2 & 0xFu), d);
    } else if (!FloatingPoint(hw1, hw2, pc, d)) {
      d->op = BF_OP_UNKNOWN;
    }
  } else if (op1 == 2u) {
    if (op == 1u) {
      BranchesMisc(hw1, hw2, pc, d);
    } else if ((op2 & 0x20u) == 0u) {
      /* A5.3.1 modified immediate: same operations as the shifted-register form. */
      DataProcessing32((hw1 >> 5) & 0xFu, (hw1 >> 4) & 1u, hw1 & 0xFu, (hw2 >> 8) & 0xFu, 0, d);
    } else {
      /* A5.3.3 plain binary immediate. */
      uint32_t opc = (hw1 >> 4) & 0x1Fu, rn = hw1 & 0xFu, rd = (hw2 >> 8) & 0xFu;
      d->op = (opc == 0x12u || opc == 0x1Au) ? BF_OP_DSP_ALU : BF_OP_ALU;
      d->writes = R(rd);
      if (opc == 0x04u) {
        d->reads = 0; /* MOVW */
      } else if (opc == 0x0Cu) {
        d->reads = R(rd); /* MOVT keeps the low half */
      } else if (opc == 0x16u) {
        d->reads = (uint16_t)(R(rd) | (rn != BF_PC ? R(rn) : 0u)); /* BFI/BFC */
      } else {
        d->reads = R(rn);
      }
    }
  } else {
    if ((op2 & 0x71u) == 0x00u) {
      StoreSingle(hw1, hw2, d);
    } else if ((op2 & 0x67u) == 0x01u || (op2 & 0x67u) == 0x03u || (op2 & 0x67u) == 0x05u) {
      LoadSingle(hw1, hw2, pc, d);
    } else if ((op2 & 0x70u) == 0x20u) {
      DataProcessingRegister(hw1, hw2, d);
    } else if ((op2 & 0x78u) == 0x30u) {
      Multiply(hw1, hw2, d);
    } else if ((op2 & 0x78u) == 0x38u) {
      LongMultiplyDivide(hw1, hw2, d);
    } else if ((op2 & 0x40u) != 0u) {
      if (!FloatingPoint(hw1, hw2, pc, d)) d->op = BF_OP_UNKNOWN;
    }
  }
}

int bf_thumb_decode(const uint8_t* bytes, size_t avail, uint32_t address, bf_insn* out) {
  uint32_t hw1;
  memset(out, 0, sizeof(*out));
  if (avail < 2u) return 0;
  hw1 = (uint32_t)bytes[0] | ((uint32_t)bytes[1] << 8);
  if ((hw1 >> 11) >= 0x1Du) {
    uint32_t hw2;
    if (avail < 4u) return 0;
    hw2 = (uint32_t)bytes[2] | ((uint32_t)bytes[3] << 8);
    Decode32(hw1, hw2, address, out);
  } else {
    Decode16(hw1, address, out);
  }
  if (out->writes & R(BF_PC)) out->flags |= BF_INSN_WRITES_PC;
  return out->size;
}

const char* bf_op_name(int op) {
  static const char* const kNames[BF_OP_COUNT] = {
      "unknown",     "alu",          "mul",        "mla",         "mull",          "mlal",
      "dsp_mul",     "dsp_mlal",     "dsp_alu",    "div",         "load",          "store",
      "load_dual",   "store_dual",   "load_multi", "store_multi", "branch",        "branch_cond",
      "branch_reg",  "table_branch", "it",         "nop",         "mark",          "barrier",
      "system",      "wait",         "exception",  "fp_alu",      "fp_mac",        "fp_fma",
      "fp_div",      "fp_sqrt",      "fp_load",    "fp_store",    "fp_load_multi", "fp_store_multi",
      "fp_mov_core", "fp_mov_core2", "fp_system",  "loop_end"};
  return (op >= 0 && op < BF_OP_COUNT) ? kNames[op] : "invalid";
}
