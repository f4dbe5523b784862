#include <math.h>
#include <stdbool.h>
void r_4_i(float* restrict data0, const float* restrict data1, const int i) {
  for (int gidx0 = 0; gidx0 < 4; gidx0++) {
    float acc4 = 0.0f;
    for (int ridx0 = 0; ridx0 < i; ridx0++) {
      float val6 = ((((i-ridx0)>=1) & (ridx0>=1))?data1[(gidx0*8+ridx0-1)]:0.0f);
      float alu7 = (val6*2.0f);
      acc4 = (acc4+alu7);
    }
    data0[gidx0] = acc4;
  }
}
