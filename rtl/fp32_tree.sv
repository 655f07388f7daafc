// Pairwise fp32 reduction of N values (N a power of two) in the documented order: neighbours
// first, level by level, each step rounded: ((x0 op x1) op (x2 op x3)) op ... (doc/isa.md
// "Reductions"). op_i as fp32_redop. Combinational (latency 0), log2(N) levels of nodes.
module fp32_tree #(
  parameter int unsigned N = 4
) (
  input  logic [1:0]          op_i,
  input  logic [N-1:0][31:0]  x_i,
  output logic [31:0]         result_o
);

  localparam int unsigned LEVELS = $clog2(N);

  // level l holds N >> l partial results; level 0 is the input
  for (genvar l = 0; l <= LEVELS; l++) begin : g_lvl
    logic [(N >> l)-1:0][31:0] v;
    if (l == 0) begin : g_in
      assign v = x_i;
    end else begin : g_ops
      for (genvar k = 0; k < (N >> l); k++) begin : g_node
        fp32_redop u_op (
          .op_i    (op_i),
          .a_i     (g_lvl[l-1].v[2*k]),
          .b_i     (g_lvl[l-1].v[2*k+1]),
          .result_o(v[k])
        );
      end
    end
  end

  assign result_o = g_lvl[LEVELS].v[0];

endmodule
