// sim_top: the co-simulation top. A TensorCore plus a loader that asks the C++ side (DPI-C, see
// rtl/sim/tinytpu_sim.cpp) for the records of the current bundle and writes them through the
// core's load ports (one record per cycle), starts the core, waits for HALT, a trap or the
// watchdog, then reads back every requested dump through the core's read ports and reports the
// status, cycles and performance counters. finished_o rises once the report is out; the C++ main
// then resets the whole top (rst_ni) before the next bundle.
//
// Signals (doc/chip.md): one core, so SIG.SEND may name core 0 only (else no_such_core) and its
// signal is looped back to the core's own flag; the two-core chip is rtl/sim/chip/sim_chip.sv.
//
// HBM: rtl/hbm.sv sits next to the core on its HBM port (timing in RTL, contents in the C++ store
// of rtl/sim/hbm_store.cpp). The C++ side preloads a bundle's HBM regions into that store before
// the run and reads `dump hbm` regions from it after (no simulated cycles: the core is idle
// then, and HALT waits for the DMA engine).
//
// SparseCore (doc/sparsecore.md): rtl/sparsecore.sv next to the core on its EMB command port; the
// core's DMA and the SparseCore share the HBM through rtl/hbm_arb.sv (requester 0: the DMA, which
// sees the HBM unchanged while the SparseCore is idle).
//
// Event capture (doc/profiler.md), only when the C++ side asks for it (tt_events_on(), read once
// per bundle at start, so normal runs pay nothing but an idle flop): for every cycle the core runs
// (issue and drain, the cycles it counts) one tt_event call with that cycle's number, the pc the
// SXU issued from (or stalled on) in it, and before it one tt_event_delta per performance counter
// that moved in that cycle. A cycle's deltas are known one edge after it, so its record goes out
// one cycle late; the capture stops with the watchdog.
module sim_top
  import tinytpu_pkg::*;
#(
  parameter int unsigned N          = 4,
  parameter int unsigned VMEM_TILES = 1024,
  parameter int unsigned PSUM_TILES = 64,
  parameter int unsigned IMEM_WORDS = 4096,
  parameter int unsigned HBM_TILES  = 1 << 20,
  parameter int unsigned HBM_LATENCY = 100,
  parameter int unsigned HBM_BW_NUM = 1,
  parameter int unsigned HBM_BW_DEN = 1
) (
  input  logic clk_i,
  input  logic rst_ni,
  output logic finished_o
);
  localparam int unsigned L       = N * N;
  localparam int unsigned IMEM_AW = $clog2(IMEM_WORDS);
  localparam int unsigned VA_W    = $clog2(VMEM_TILES);
  localparam int unsigned PA_W    = $clog2(PSUM_TILES);
  localparam int unsigned RD_WAIT = 4;  // cycles to wait for a dump read (>= the core's read latency)

  // record kinds shared with the C++ side
  localparam int K_NONE = 0, K_IMEM = 1, K_VMEM = 2, K_PSUM = 3, K_SREG = 4;

  import "DPI-C" function int tt_load_next();                   // kind of the next preload, K_NONE at the end
  import "DPI-C" function int tt_load_addr();
  import "DPI-C" function longint unsigned tt_load_word();      // program word or register value
  import "DPI-C" function int unsigned tt_load_lane(input int lane);
  import "DPI-C" function longint tt_max_cycles();
  import "DPI-C" function int tt_dump_next();                   // kind of the next dump tile, K_NONE at the end
  import "DPI-C" function int tt_dump_addr();
  import "DPI-C" function void tt_dump_lane(input int lane, input int unsigned value);
  import "DPI-C" function void tt_report(input int status, input int pc, input int unsigned cycles, input int timeout);
  import "DPI-C" function void tt_report_perf(input int idx, input int unsigned value);
  import "DPI-C" function int tt_events_on();
  import "DPI-C" function void tt_event_delta(input int idx, input int unsigned delta);
  import "DPI-C" function void tt_event(input int unsigned cycle, input int unsigned pc);

  typedef enum logic [2:0] {S_INIT, S_LOAD, S_RUN, S_DUMP, S_READ, S_REPORT, S_FIN} state_e;

  state_e             state_q;
  logic               imem_we_q, vmem_we_q, psum_we_q, sreg_we_q, start_q;
  logic [31:0]        addr_q;
  logic [63:0]        word_q;
  logic [L-1:0][31:0] tile_q;
  logic [63:0]        wd_q;       // watchdog: cycles since start
  logic               timeout_q;
  int                 dkind_q;
  logic [3:0]         wait_q;

  logic                      core_ready, core_done;
  trap_e                     status;
  logic [31:0]               pc, cycles;
  logic [NUM_PERF-1:0][31:0] perf;
  logic [L-1:0][31:0]        vmem_rdata, psum_rdata;
  logic [31:0]               sreg_rdata;
  logic                      core_running;
  logic                      hbm_req_valid, hbm_req_ready, hbm_req_we, hbm_rsp_valid, hbm_rsp_we, hbm_err;
  logic [31:0]               hbm_req_addr;
  logic [L-1:0][31:0]        hbm_req_wdata, hbm_rsp_rdata;
  logic                      sig_valid;
  logic [3:0]                sig_core;
  logic [$clog2(SIG_FLAGS)-1:0] sig_flag;
  // --- SparseCore: its command port and the two HBM requesters (0: DMA, 1: SparseCore) ---
  logic                      emb_valid, emb_fp, emb_busy, emb_chk_valid, emb_chk_bad;
  logic [31:0]               emb_tbase, emb_rows, emb_idx, emb_dst;
  logic [4:0]                emb_width;
  logic [15:0]               emb_bag;
  logic [7:0]                emb_bags;
  logic [1:0]                arb_valid, arb_ready, arb_we, arb_rsp_valid;
  logic [1:0][31:0]          arb_addr;
  logic [1:0][L-1:0][31:0]   arb_wdata;
  logic                      arb_rsp_we, unused_sc_ready;
  logic [L-1:0][31:0]        arb_rsp_rdata;
  logic                      mem_req_valid, mem_req_ready, mem_req_we;
  logic [31:0]               mem_req_addr;
  logic [L-1:0][31:0]        mem_req_wdata;

  tensorcore #(
    .N(N), .VMEM_TILES(VMEM_TILES), .PSUM_TILES(PSUM_TILES), .IMEM_WORDS(IMEM_WORDS),
    .HBM_TILES(HBM_TILES), .HBM_LATENCY(HBM_LATENCY)
  ) u_core (
    .clk_i,
    .rst_ni,
    .imem_we_i    (imem_we_q),
    .imem_addr_i  (IMEM_AW'(addr_q)),
    .imem_wdata_i (word_q),
    .vmem_we_i    (vmem_we_q),
    .vmem_addr_i  (VA_W'(addr_q)),
    .vmem_wdata_i (tile_q),
    .vmem_rdata_o (vmem_rdata),
    .psum_we_i    (psum_we_q),
    .psum_addr_i  (PA_W'(addr_q)),
    .psum_wdata_i (tile_q),
    .psum_rdata_o (psum_rdata),
    .sreg_we_i    (sreg_we_q),
    .sreg_addr_i  (addr_q[3:0]),
    .sreg_wdata_i (word_q[31:0]),
    .sreg_rdata_o (sreg_rdata),
    .start_i      (start_q),
    .ready_o      (core_ready),
    .running_o    (core_running),
    .done_o       (core_done),
    .status_o     (status),
    .pc_o         (pc),
    .cycles_o     (cycles),
    .perf_o       (perf),
    .hbm_req_valid_o (hbm_req_valid),
    .hbm_req_ready_i (hbm_req_ready),
    .hbm_req_we_o    (hbm_req_we),
    .hbm_req_addr_o  (hbm_req_addr),
    .hbm_req_wdata_o (hbm_req_wdata),
    .hbm_rsp_valid_i (arb_rsp_valid[0]),
    .hbm_rsp_we_i    (arb_rsp_we),
    .hbm_rsp_rdata_i (arb_rsp_rdata),
    .emb_valid_o     (emb_valid),
    .emb_fp_o        (emb_fp),
    .emb_tbase_o     (emb_tbase),
    .emb_rows_o      (emb_rows),
    .emb_width_o     (emb_width),
    .emb_bag_o       (emb_bag),
    .emb_bags_o      (emb_bags),
    .emb_idx_o       (emb_idx),
    .emb_dst_o       (emb_dst),
    .emb_busy_i      (emb_busy),
    .emb_chk_valid_i (emb_chk_valid),
    .emb_chk_bad_i   (emb_chk_bad),
    .sig_valid_o     (sig_valid),
    .sig_core_o      (sig_core),
    .sig_flag_o      (sig_flag),
    .sig_ready_i     (1'b1),
    .sig_rx_valid_i  (sig_valid),   // core 0 signals itself (CORES = 1: no other id passes)
    .sig_rx_flag_i   (sig_flag)
  );

  // --- SparseCore and the HBM arbiter ---
  sparsecore #(.N(N), .HBM_TILES(HBM_TILES), .HBM_LATENCY(HBM_LATENCY)) u_sc (
    .clk_i,
    .rst_ni,
    .cmd_valid_i     (emb_valid),
    .cmd_ready_o     (unused_sc_ready),
    .cmd_fp_i        (emb_fp),
    .cmd_tbase_i     (emb_tbase),
    .cmd_rows_i      (emb_rows),
    .cmd_width_i     (emb_width),
    .cmd_bag_i       (emb_bag),
    .cmd_bags_i      (emb_bags),
    .cmd_idx_i       (emb_idx),
    .cmd_dst_i       (emb_dst),
    .chk_valid_o     (emb_chk_valid),
    .chk_bad_o       (emb_chk_bad),
    .busy_o          (emb_busy),
    .hbm_req_valid_o (arb_valid[1]),
    .hbm_req_ready_i (arb_ready[1]),
    .hbm_req_we_o    (arb_we[1]),
    .hbm_req_addr_o  (arb_addr[1]),
    .hbm_req_wdata_o (arb_wdata[1]),
    .hbm_rsp_valid_i (arb_rsp_valid[1]),
    .hbm_rsp_we_i    (arb_rsp_we),
    .hbm_rsp_rdata_i (arb_rsp_rdata)
  );

  assign arb_valid[0]  = hbm_req_valid;
  assign arb_we[0]     = hbm_req_we;
  assign arb_addr[0]   = hbm_req_addr;
  assign arb_wdata[0]  = hbm_req_wdata;
  assign hbm_req_ready = arb_ready[0];

  hbm_arb #(.N(N), .LATENCY(HBM_LATENCY)) u_arb (
    .clk_i,
    .rst_ni,
    .req_valid_i     (arb_valid),
    .req_ready_o     (arb_ready),
    .req_we_i        (arb_we),
    .req_addr_i      (arb_addr),
    .req_wdata_i     (arb_wdata),
    .rsp_valid_o     (arb_rsp_valid),
    .rsp_we_o        (arb_rsp_we),
    .rsp_rdata_o     (arb_rsp_rdata),
    .hbm_req_valid_o (mem_req_valid),
    .hbm_req_ready_i (mem_req_ready),
    .hbm_req_we_o    (mem_req_we),
    .hbm_req_addr_o  (mem_req_addr),
    .hbm_req_wdata_o (mem_req_wdata),
    .hbm_rsp_valid_i (hbm_rsp_valid),
    .hbm_rsp_we_i    (hbm_rsp_we),
    .hbm_rsp_rdata_i (hbm_rsp_rdata)
  );

  hbm #(
    .N(N), .TILES(HBM_TILES), .LATENCY(HBM_LATENCY), .BW_NUM(HBM_BW_NUM), .BW_DEN(HBM_BW_DEN)
  ) u_hbm (
    .clk_i,
    .rst_ni,
    .req_valid_i (mem_req_valid),
    .req_ready_o (mem_req_ready),
    .req_we_i    (mem_req_we),
    .req_addr_i  (mem_req_addr),
    .req_wdata_i (mem_req_wdata),
    .rsp_valid_o (hbm_rsp_valid),
    .rsp_we_o    (hbm_rsp_we),
    .rsp_rdata_o (hbm_rsp_rdata),
    .err_o       (hbm_err)
  );

  `include "assert.svh"
  `ASSERT(NoHbmErr, !hbm_err)
  `ASSERT(SigToSelf, sig_valid |-> sig_core == 4'd0)

  assign finished_o = state_q == S_FIN;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q   <= S_INIT;
      imem_we_q <= 1'b0;
      vmem_we_q <= 1'b0;
      psum_we_q <= 1'b0;
      sreg_we_q <= 1'b0;
      start_q   <= 1'b0;
      addr_q    <= '0;
      word_q    <= '0;
      tile_q    <= '0;
      wd_q      <= '0;
      timeout_q <= 1'b0;
      dkind_q   <= K_NONE;
      wait_q    <= '0;
    end else begin
      imem_we_q <= 1'b0;
      vmem_we_q <= 1'b0;
      psum_we_q <= 1'b0;
      sreg_we_q <= 1'b0;
      start_q   <= 1'b0;
      unique case (state_q)
        S_INIT: if (core_ready) state_q <= S_LOAD;  // the core is ready (the cycle after reset)
        S_LOAD: begin
          int k;
          k = tt_load_next();
          addr_q <= 32'(tt_load_addr());
          word_q <= tt_load_word();
          if (k == K_VMEM || k == K_PSUM) begin
            for (int i = 0; i < L; i++) tile_q[i] <= tt_load_lane(i);
          end
          imem_we_q <= k == K_IMEM;
          vmem_we_q <= k == K_VMEM;
          psum_we_q <= k == K_PSUM;
          sreg_we_q <= k == K_SREG;
          if (k == K_NONE) begin
            start_q <= 1'b1;
            wd_q    <= '0;
            state_q <= S_RUN;
          end
        end
        S_RUN: begin
          wd_q <= wd_q + 64'd1;
          if (!start_q && core_done) begin
            state_q <= S_DUMP;
          end else if (!start_q && $signed(wd_q) >= tt_max_cycles()) begin
            timeout_q <= 1'b1;
            state_q   <= S_DUMP;
          end
        end
        S_DUMP: begin
          int k;
          k = tt_dump_next();
          dkind_q <= k;
          addr_q  <= 32'(tt_dump_addr());
          wait_q  <= 4'(RD_WAIT);
          state_q <= k == K_NONE ? S_REPORT : S_READ;
        end
        S_READ: begin
          if (wait_q != 0) begin
            wait_q <= wait_q - 4'd1;
          end else begin
            for (int i = 0; i < L; i++) begin
              if (dkind_q == K_VMEM) tt_dump_lane(i, vmem_rdata[i]);
              else if (dkind_q == K_PSUM) tt_dump_lane(i, psum_rdata[i]);
            end
            if (dkind_q == K_SREG) begin
              tt_dump_lane(int'(addr_q), sreg_rdata);
              if (addr_q == 32'd15) state_q <= S_DUMP;
              else begin
                addr_q <= addr_q + 32'd1;
                wait_q <= 4'd1;
              end
            end else begin
              state_q <= S_DUMP;
            end
          end
        end
        S_REPORT: begin
          for (int i = 0; i < NUM_PERF; i++) tt_report_perf(i, perf[i]);
          tt_report(int'(status), int'(pc), cycles, int'(timeout_q));
          state_q <= S_FIN;
        end
        default: ;
      endcase
    end
  end

  // event capture: a running cycle t is sampled at its closing edge (cycles = t, pc = the pc issued
  // or stalled on in t: sxu's pc_q, perf = the counters before t) and reported at the next edge,
  // when perf holds the counts after t
  logic                      ev_on_q, ev_valid_q;
  logic [31:0]               ev_cycle_q, ev_pc_q;
  logic [NUM_PERF-1:0][31:0] ev_perf_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ev_on_q    <= 1'b0;
      ev_valid_q <= 1'b0;
      ev_cycle_q <= '0;
      ev_pc_q    <= '0;
      ev_perf_q  <= '0;
    end else begin
      if (start_q) ev_on_q <= tt_events_on() != 0;
      if (ev_on_q) begin
        if (ev_valid_q) begin
          for (int i = 0; i < NUM_PERF; i++) begin
            if (perf[i] != ev_perf_q[i]) tt_event_delta(i, perf[i] - ev_perf_q[i]);
          end
          tt_event(ev_cycle_q, ev_pc_q);
        end
        ev_valid_q <= core_running && state_q == S_RUN;
        ev_cycle_q <= cycles;
        ev_pc_q    <= pc;
        ev_perf_q  <= perf;
      end
    end
  end

endmodule
