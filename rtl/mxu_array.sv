// mxu_array: N x N weight-stationary systolic array of mxu_pe, with input skew and output
// de-skew, so it takes and returns whole rows.
// PE[k][n] holds W[k][n]. Activation element k of a row enters PE row k after k skew cycles and
// moves right one PE per cycle; partial sums move down. Column n leaves the bottom at
// entry + N + n and is delayed N-1-n more cycles, so every lane of a result row appears together:
//   int8 row (fp_i = 0): out[n] = sum_k int8(a[k]) * int8(W[k][n]), int32 wrap;
//   bf16 row (fp_i = 1): out[n] = (((-0 + a0*w0) + a1*w1) + ...) + a[N-1]*w[N-1], fp32 ops in
//        this order down the column (-0 + x = x for every x: the sum is the first product, then
//        the others in k order).
// Each row carries its own mode, so int8 and bf16 rows stream back to back.
// Latency: LAT = 2N-1 cycles from row_valid_i to the same row on sum_o (out_valid_o), one row
// per cycle, in both modes. The last PE that uses a row's weights does so 2N-2 cycles after it
// entered.
module mxu_array #(
  parameter int unsigned N = 4
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  // weight load into one bank of every PE (lane [k][n] of w_i is W[k][n]: {bf16, int8}, 24 bits)
  input  logic                w_we_i,
  input  logic                w_bank_i,
  input  logic [N*N*24-1:0]   w_i,
  // one activation row (element k at bits 16k +: 16), the weight bank it uses and its mode
  input  logic [N*16-1:0]     a_i,
  input  logic                bank_i,
  input  logic                fp_i,
  // the result row (lane n at bits 32n +: 32), LAT cycles after its activation row
  output logic [N*32-1:0]     sum_o
);
  // a_h[k][n], bank_h[k][n], fp_h[k][n]: activation into PE[k][n]; s_v[k][n]: partial sum into PE[k][n]
  logic [15:0] a_h    [N][N+1];
  logic        bank_h [N][N+1];
  logic        fp_h   [N][N+1];
  logic [31:0] s_v    [N+1][N];

  for (genvar k = 0; k < N; k++) begin : g_row
    // input skew: row k of the array sees element k of a row k cycles late
    logic [15:0] skew_a_q [k+1];
    logic        skew_b_q [k+1];
    logic        skew_f_q [k+1];
    assign skew_a_q[0] = a_i[16*k +: 16];
    assign skew_b_q[0] = bank_i;
    assign skew_f_q[0] = fp_i;
    for (genvar d = 1; d <= k; d++) begin : g_skew
      always_ff @(posedge clk_i or negedge rst_ni) begin
        if (!rst_ni) begin
          skew_a_q[d] <= '0;
          skew_b_q[d] <= 1'b0;
          skew_f_q[d] <= 1'b0;
        end else begin
          skew_a_q[d] <= skew_a_q[d-1];
          skew_b_q[d] <= skew_b_q[d-1];
          skew_f_q[d] <= skew_f_q[d-1];
        end
      end
    end
    assign a_h[k][0]    = skew_a_q[k];
    assign bank_h[k][0] = skew_b_q[k];
    assign fp_h[k][0]   = skew_f_q[k];

    for (genvar n = 0; n < N; n++) begin : g_col
      mxu_pe u_pe (
        .clk_i,
        .rst_ni,
        .w_we_i   (w_we_i),
        .w_bank_i (w_bank_i),
        .w_i      (w_i[24*(k*N+n) +: 24]),
        .a_i      (a_h[k][n]),
        .bank_i   (bank_h[k][n]),
        .fp_i     (fp_h[k][n]),
        .sum_i    (s_v[k][n]),
        .a_o      (a_h[k][n+1]),
        .bank_o   (bank_h[k][n+1]),
        .fp_o     (fp_h[k][n+1]),
        .sum_o    (s_v[k+1][n])
      );
    end
  end

  for (genvar n = 0; n < N; n++) begin : g_out
    // the top of a column: 0 for an int8 row, -0 (the fp32 identity of add) for a bf16 row
    assign s_v[0][n] = {fp_h[0][n], 31'd0};
    // output de-skew: column n leaves the array n cycles after column 0; delay it N-1-n more
    logic [31:0] deskew_q [N-n];
    assign deskew_q[0] = s_v[N][n];
    for (genvar d = 1; d < N - n; d++) begin : g_deskew
      always_ff @(posedge clk_i or negedge rst_ni) begin
        if (!rst_ni) deskew_q[d] <= '0;
        else         deskew_q[d] <= deskew_q[d-1];
      end
    end
    assign sum_o[32*n +: 32] = deskew_q[N-1-n];
  end

  // the last PE column's activations leave the array unused
  logic unused_a;
  always_comb begin
    unused_a = 1'b0;
    for (int k = 0; k < N; k++) unused_a ^= ^{a_h[k][N], bank_h[k][N], fp_h[k][N]};
  end
endmodule
