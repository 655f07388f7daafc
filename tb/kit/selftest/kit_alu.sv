// kit_alu: the verification kit's self-test DUT (not part of the TinyTPU core).
// A valid/ready 32-bit ALU (add, sub, xor, mul low) with one output register.
// Latency: 1 cycle from an accepted request to res_valid_o; accepts a new request every cycle
// while the response side is ready (req_ready_o = !res_valid_o || res_ready_i).
module kit_alu (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        req_valid_i,
  output logic        req_ready_o,
  input  logic [1:0]  op_i,
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic        res_valid_o,
  input  logic        res_ready_i,
  output logic [31:0] res_o
);
  logic        valid_q;
  logic [31:0] res_q, res_d;

  always_comb begin
    unique case (op_i)
      2'd0: res_d = a_i + b_i;
      2'd1: res_d = a_i - b_i;
      2'd2: res_d = a_i ^ b_i;
      default: res_d = a_i * b_i;
    endcase
  end

  assign req_ready_o = !valid_q || res_ready_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= 1'b0;
      res_q   <= '0;
    end else begin
      if (req_valid_i && req_ready_o) begin
        valid_q <= 1'b1;
        res_q   <= res_d;
      end else if (res_ready_i) begin
        valid_q <= 1'b0;
      end
    end
  end

  assign res_valid_o = valid_q;
  assign res_o       = res_q;
endmodule
