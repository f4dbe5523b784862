#include <math.h>
#include <stdbool.h>
typedef float float8 __attribute__((vector_size(32)));
typedef float float8_u __attribute__((vector_size(32), aligned(4)));
typedef int int8 __attribute__((vector_size(32)));
static inline float8 tl_exp2_float8(float8 x) {
  int8 nan = x != x;
  float8 c = ((float8)(((x > 128.0f)&((int8)((float8){}+128.0f)))|(~(x > 128.0f)&((int8)x))));
  c = ((float8)(((c < -150.0f)&((int8)((float8){}-150.0f)))|(~(c < -150.0f)&((int8)c))));
  float8 n = (c + 12582912.0f) - 12582912.0f;  /* round to nearest */
  float8 f = c - n;
  float8 p = (((((((1.525273380405984e-05f*f+1.540353039338161e-04f)*f+1.333355814642844e-03f)*f+9.618129107628477e-03f)*f+5.550410866482158e-02f)*f+2.402265069591007e-01f)*f+6.931471805599453e-01f)*f+1.0f);
  int8 k = __builtin_convertvector(n, int8); int8 a = k >> 1, b = k - a;
  float8 r = p * (float8)((a + 127) << 23) * (float8)((b + 127) << 23);
  return ((float8)((nan&((int8)x))|(~nan&((int8)r))));
}
void E_512_8(float* restrict data0, const float* restrict data1, const float* restrict data2) {
  for (int gidx0 = 0; gidx0 < 512; gidx0++) {
    float8 val7 = *((float8_u*)(data1+gidx0*8));
    float8 val8 = *((float8_u*)(data2+gidx0*8));
    float8 alu9 = (val7+val8);
    float8 alu10 = (alu9*(2.0f-(float8){}));
    int8 alu11 = ((0.0f-(float8){})<alu10);
    int8 alu12 = (alu10!=alu10);
    float8 alu13 = ((float8)((alu12&((int8)alu10))|(~alu12&((int8)(0.0f-(float8){})))));
    float8 alu14 = ((float8)((alu11&((int8)alu10))|(~alu11&((int8)alu13))));
    float8 alu15 = (alu14*(1.4426950408889634f-(float8){}));
    float8 alu16 = tl_exp2_float8(alu15);
    *((float8_u*)(data0+gidx0*8)) = alu16;
  }
}
