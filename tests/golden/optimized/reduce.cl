__kernel void r_16_64_4(__global float* restrict data0, __global const float* restrict data1, __global const float* restrict data2) {
  int lidx0 = get_local_id(0);
  float acc4 = 0.0f;
  for (int ridx0 = 0; ridx0 < 16; ridx0++) {
    float val6 = data1[(lidx0*64+ridx0*4)];
    float val7 = data2[(lidx0*64+ridx0*4)];
    float alu8 = (val6*val7);
    acc4 = (acc4+alu8);
    float val10 = data1[(lidx0*64+ridx0*4+1)];
    float val11 = data2[(lidx0*64+ridx0*4+1)];
    float alu12 = (val10*val11);
    acc4 = (acc4+alu12);
    float val14 = data1[(lidx0*64+ridx0*4+2)];
    float val15 = data2[(lidx0*64+ridx0*4+2)];
    float alu16 = (val14*val15);
    acc4 = (acc4+alu16);
    float val18 = data1[(lidx0*64+ridx0*4+3)];
    float val19 = data2[(lidx0*64+ridx0*4+3)];
    float alu20 = (val18*val19);
    acc4 = (acc4+alu20);
  }
  float alu23 = sqrt(acc4);
  data0[lidx0] = alu23;
}
