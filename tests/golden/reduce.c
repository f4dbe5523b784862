#include <math.h>
#include <stdbool.h>
void r_8_8(float* restrict data0, const float* restrict data1, const float* restrict data2) {
  for (int gidx0 = 0; gidx0 < 8; gidx0++) {
    float acc4 = 0.0f;
    for (int ridx0 = 0; ridx0 < 8; ridx0++) {
      float val6 = data1[(gidx0*8+ridx0)];
      float val7 = data2[(gidx0*8+ridx0)];
      float alu8 = (val6*val7);
      acc4 = (acc4+alu8);
    }
    float alu11 = sqrtf(acc4);
    data0[gidx0] = alu11;
  }
}
