// RUN: strata-opt %s -split-input-file -legalize-bf16-storage | FileCheck %s

// A widening load and a narrowing store as arith-expand{include-bf16} leaves
// them: the bf16 vectors become i16 and the bitcasts between them vanish.
// CHECK-LABEL: llvm.func @widen_narrow
// CHECK:         %[[V:.*]] = llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> vector<16xi16>
// CHECK-NEXT:    %[[W:.*]] = llvm.zext %[[V]] : vector<16xi16> to vector<16xi32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} {alignment = 2 : i64} : vector<16xi16>, !llvm.ptr
// CHECK-NOT:     bf16
// CHECK:         llvm.return
llvm.func @widen_narrow(%p: !llvm.ptr, %q: !llvm.ptr) {
  %v = llvm.load %p {alignment = 2 : i64} : !llvm.ptr -> vector<16xbf16>
  %i = llvm.bitcast %v : vector<16xbf16> to vector<16xi16>
  %w = llvm.zext %i : vector<16xi16> to vector<16xi32>
  %n = llvm.trunc %w : vector<16xi32> to vector<16xi16>
  %b = llvm.bitcast %n : vector<16xi16> to vector<16xbf16>
  llvm.store %b, %q {alignment = 2 : i64} : vector<16xbf16>, !llvm.ptr
  llvm.return
}

// -----

// Constants keep their bits (0.0 is 0, 1.0 is 0x3F80 = 16256); masked loads,
// shuffles, aggregates and block arguments carry i16.
// CHECK-LABEL: llvm.func @moves
// CHECK-DAG:     llvm.mlir.constant(dense<0> : vector<4xi16>) : vector<4xi16>
// CHECK-DAG:     llvm.mlir.constant(16256 : i16) : i16
// CHECK:         llvm.intr.masked.load %{{.*}} : (!llvm.ptr, vector<4xi1>, vector<4xi16>) -> vector<4xi16>
// CHECK:         llvm.shufflevector %{{.*}} [1, 0] : vector<4xi16>
// CHECK:         llvm.insertvalue %{{.*}} : !llvm.array<2 x vector<2xi16>>
// CHECK:         ^bb1(%{{.*}}: !llvm.array<2 x vector<2xi16>>):
// CHECK-NOT:     bf16
llvm.func @moves(%p: !llvm.ptr, %m: vector<4xi1>) -> vector<2xi16> {
  %z = llvm.mlir.constant(dense<0.0> : vector<4xbf16>) : vector<4xbf16>
  %one = llvm.mlir.constant(1.0 : bf16) : bf16
  %v = llvm.intr.masked.load %p, %m, %z {alignment = 2 : i32} : (!llvm.ptr, vector<4xi1>, vector<4xbf16>) -> vector<4xbf16>
  %s = llvm.shufflevector %v, %v [1, 0] : vector<4xbf16>
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %t = llvm.insertelement %one, %s[%c0 : i64] : vector<2xbf16>
  %u = llvm.mlir.poison : !llvm.array<2 x vector<2xbf16>>
  %a = llvm.insertvalue %t, %u[0] : !llvm.array<2 x vector<2xbf16>>
  llvm.br ^bb1(%a : !llvm.array<2 x vector<2xbf16>>)
^bb1(%x: !llvm.array<2 x vector<2xbf16>>):
  %e = llvm.extractvalue %x[0] : !llvm.array<2 x vector<2xbf16>>
  %r = llvm.bitcast %e : vector<2xbf16> to vector<2xi16>
  llvm.return %r : vector<2xi16>
}
