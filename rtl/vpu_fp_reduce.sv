// The tile-wide fp32 functions of the VPU: FSUM/FMAX/FMIN/FPROD reductions over a ROW, a COL or the
// whole TILE in the documented pairwise tree order (neighbours first, each step rounded; TILE
// reduces every row, then the row results), FARGMAX_ROW/FARGMIN_ROW (first index of the extreme;
// a NaN counts as the extreme, like numpy) and FROTPAIR (lane pairs (2p, 2p+1) rotated by
// c = b[2p], s = b[2p+1]: x0*c - x1*s and x0*s + x1*c, each product and the sum rounded).
// N row trees serve ROW and (on the transposed tile) COL; one more tree over the row results gives
// TILE. Purely combinational (latency 0): vpu.sv registers the result and delays it to the
// documented latency (4 for ROW/COL, 6 for TILE, 2 for FROTPAIR and FARG*). Other functions give 0.
module vpu_fp_reduce
  import tinytpu_pkg::*;
#(
  parameter int unsigned N = 4
) (
  input  vpu_fn_e                fn_i,
  input  logic [N*N-1:0][31:0]   a_i,
  input  logic [N*N-1:0][31:0]   b_i,
  output logic [N*N-1:0][31:0]   result_o
);

  localparam int unsigned L = N * N;
  localparam int unsigned IW = $clog2(N);

  // reduction kind (as fp32_pkg::redop): 0 sum, 1 max, 2 min, 3 prod
  function automatic logic [1:0] red_op(vpu_fn_e fn);
    logic [1:0] res;
    unique case (fn)
      VPU_FMAX_ROW, VPU_FMAX_COL, VPU_FMAX_TILE:    res = 2'd1;
      VPU_FMIN_ROW, VPU_FMIN_COL, VPU_FMIN_TILE:    res = 2'd2;
      VPU_FPROD_ROW, VPU_FPROD_COL, VPU_FPROD_TILE: res = 2'd3;
      default:                                      res = 2'd0;
    endcase
    return res;
  endfunction

  // the pairwise tree of fp32_tree: level by level, node k combines nodes 2k and 2k+1 of the
  // level below (node k is written after nodes 2k and 2k+1 were read, so one vector suffices).
  // The loops stay loops in Verilator's C++ (unroll_disable): one inlined copy of the fp units.
  function automatic logic [31:0] tree(logic [1:0] op, logic [N-1:0][31:0] x);
    logic [N-1:0][31:0] v;
    v = x;
    /*verilator unroll_disable*/
    for (int unsigned w = N / 2; w >= 1; w = w / 2) begin
      /*verilator unroll_disable*/
      for (int unsigned k = 0; k < w; k++) v[k] = fp32_pkg::redop(op, v[2*k], v[2*k+1]);
    end
    return v[0];
  endfunction

  logic is_col, is_tile;
  assign is_col  = fn_i inside {VPU_FSUM_COL, VPU_FMAX_COL, VPU_FMIN_COL, VPU_FPROD_COL};
  assign is_tile = fn_i inside {VPU_FSUM_TILE, VPU_FMAX_TILE, VPU_FMIN_TILE, VPU_FPROD_TILE};

  // only the selected function is computed (a simulator skips the other branches). Tree i < N
  // reduces row i (column i for COL); tree N, for TILE, reduces the row results.
  logic [N:0][31:0] line_res;
  logic [N-1:0][31:0] x;
  logic [IW-1:0] arg;
  logic [31:0] best, red;
  logic [3:0][31:0] prod;
  logic take;
  always_comb begin
    result_o = '0;
    line_res = '0;
    x        = '0;
    arg      = '0;
    best     = '0;
    red      = '0;
    prod     = '0;
    take     = 1'b0;
    unique case (fn_i)
      VPU_FSUM_ROW, VPU_FMAX_ROW, VPU_FMIN_ROW, VPU_FPROD_ROW,
      VPU_FSUM_COL, VPU_FMAX_COL, VPU_FMIN_COL, VPU_FPROD_COL,
      VPU_FSUM_TILE, VPU_FMAX_TILE, VPU_FMIN_TILE, VPU_FPROD_TILE: begin
        /*verilator unroll_disable*/
        for (int unsigned i = 0; i <= N; i++) begin
          for (int unsigned j = 0; j < N; j++) begin
            if (i == N) x[j] = line_res[j];
            else x[j] = is_col ? a_i[j*N + i] : a_i[i*N + j];
          end
          if (i < N || is_tile) line_res[i] = tree(red_op(fn_i), x);
        end
        for (int unsigned r = 0; r < N; r++) begin
          for (int unsigned c = 0; c < N; c++) begin
            result_o[r*N + c] = is_tile ? line_res[N] : (is_col ? line_res[c] : line_res[r]);
          end
        end
      end
      // first index of the row maximum/minimum: a later element wins only if strictly beyond the
      // current best, and a NaN beats everything unless the best already is a NaN
      VPU_FARGMAX_ROW, VPU_FARGMIN_ROW: begin
        for (int unsigned r = 0; r < N; r++) begin
          best = a_i[r*N];
          arg  = '0;
          for (int unsigned j = 1; j < N; j++) begin
            red = a_i[r*N + j];
            if (is_nan(best[30:0])) take = 1'b0;
            else if (is_nan(red[30:0])) take = 1'b1;
            else take = (fn_i == VPU_FARGMIN_ROW) ? flt(red, best) : flt(best, red);
            if (take) begin
              best = red;
              arg  = IW'(j);
            end
          end
          for (int unsigned c = 0; c < N; c++) result_o[r*N + c] = 32'(arg);
        end
      end
      // FROTPAIR: four rounded products x0*c, x1*s, x0*s, x1*c (k = 0..3: a[2p + k%2] times
      // b[2p + (k%2 xor k/2)]), then the rounded x0*c - x1*s and x0*s + x1*c
      VPU_FROTPAIR: begin
        /*verilator unroll_disable*/
        for (int unsigned p = 0; p < L / 2; p++) begin
          /*verilator unroll_disable*/
          for (int unsigned k = 0; k < 4; k++) begin
            prod[k] = fp32_pkg::mul(a_i[2*p + (k & 1)], b_i[2*p + ((k & 1) ^ (k >> 1))]);
          end
          /*verilator unroll_disable*/
          for (int unsigned k = 0; k < 2; k++) begin
            result_o[2*p + k] = fp32_pkg::add(prod[2*k], prod[2*k+1] ^ ((k == 0) ? 32'h8000_0000 : '0));
          end
        end
      end
      default: result_o = '0;
    endcase
  end

  function automatic logic is_nan(logic [30:0] v);  // the sign bit does not matter
    return (v[30:23] == 8'hff) && (v[22:0] != '0);
  endfunction

  // ordered a < b for non-NaN values, -0 == +0
  function automatic logic flt(logic [31:0] a, logic [31:0] b);
    logic [31:0] ka, kb;
    logic res;
    ka = a[31] ? ~a : {1'b1, a[30:0]};
    kb = b[31] ? ~b : {1'b1, b[30:0]};
    if (a[30:0] == '0 && b[30:0] == '0) res = 1'b0;
    else res = ka < kb;
    return res;
  endfunction

endmodule
