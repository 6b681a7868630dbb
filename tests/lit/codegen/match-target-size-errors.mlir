// RUN: strata-opt %s -split-input-file -match-target-size=target=tpu -verify-diagnostics

// expected-error @+1 {{unknown target 'tpu' (known: cpu-avx2, cpu-avx512, sm_90, xe:pvc, xe:bmg, xe:dg2)}}
func.func @unknown_target() {
  return
}

