// RUN: strata-opt %s -split-input-file -legalize-bf16-storage -verify-diagnostics

llvm.func @arithmetic(%p: !llvm.ptr) {
  %v = llvm.load %p : !llvm.ptr -> vector<8xbf16>
  // expected-error @+1 {{computes on bf16 values: expand bf16 arithmetic (arith-expand{include-bf16}) first}}
  %s = llvm.fadd %v, %v : vector<8xbf16>
  llvm.store %s, %p : vector<8xbf16>, !llvm.ptr
  llvm.return
}

// -----

// expected-error @+1 {{takes or returns bf16 values; kernels take bf16 buffers through pointers}}
llvm.func @bf16_argument(%x: bf16, %p: !llvm.ptr) {
  llvm.store %x, %p : bf16, !llvm.ptr
  llvm.return
}

// -----

// A conversion the expansion left: its result is not bf16, but it reads one.
llvm.func @widening(%p: !llvm.ptr, %q: !llvm.ptr) {
  %v = llvm.load %p : !llvm.ptr -> vector<8xbf16>
  // expected-error @+1 {{computes on bf16 values: expand bf16 arithmetic (arith-expand{include-bf16}) first}}
  %w = llvm.fpext %v : vector<8xbf16> to vector<8xf32>
  llvm.store %w, %q : vector<8xf32>, !llvm.ptr
  llvm.return
}
