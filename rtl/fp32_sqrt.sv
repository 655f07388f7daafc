// IEEE-754 binary32 square root, round to nearest even, subnormal inputs. sqrt(±0) = ±0,
// sqrt(+inf) = +inf, a negative operand or a NaN gives the canonical NaN 0x7FC00000.
// The significand is normalised and widened to a 54-bit radicand with an even exponent, then a
// restoring digit-by-digit recurrence produces a 27-bit root; the remainder is the sticky bit.
// Combinational (latency 0): the VPU pipeline around it gives FSQRT its 6 cycles.
module fp32_sqrt (
  input  logic [31:0] a_i,
  output logic [31:0] result_o
);

  assign result_o = fp32_pkg::sqrt(a_i);

endmodule
