// WebGPU runner for tinylab's WGSL kernels, shared by the inspector's "Run on this browser's GPU"
// button and the pages tinylab.export.webgpu writes. Takes kernels ({name, source, dispatch,
// bindings}) and byte buffers; gives results read back, the adapter's name and the GPU time
// (timestamp queries where the adapter has them, else wall time). Plain functions, no imports.

function webgpuUnavailableReason() {
  if (typeof navigator !== "undefined" && navigator.gpu) return "";
  if (typeof isSecureContext !== "undefined" && !isSecureContext) {
    return "this page is not a secure context (WebGPU needs HTTPS, or plain HTTP from localhost " +
      "or 127.0.0.1), so the browser hides navigator.gpu";
  }
  return "this browser has no WebGPU (navigator.gpu is missing): use a recent Chrome, Edge or " +
    "Safari, or switch WebGPU on in Firefox";
}

const WEBGPU_LIMITS = ["maxStorageBuffersPerShaderStage", "maxStorageBufferBindingSize",
                       "maxBufferSize", "maxComputeWorkgroupsPerDimension"];

async function openWebGPU() {
  const reason = webgpuUnavailableReason();
  if (reason) throw new Error(reason);
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) {
    throw new Error("navigator.gpu exists but found no adapter (the GPU is blocklisted, or " +
      "WebGPU is switched off for it)");
  }
  const features = adapter.features.has("timestamp-query") ? ["timestamp-query"] : [];
  const requiredLimits = {};
  for (const name of WEBGPU_LIMITS) requiredLimits[name] = adapter.limits[name];
  const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
  let info = adapter.info;
  if (!info && adapter.requestAdapterInfo) info = await adapter.requestAdapterInfo();
  info = info || {};
  const name = [info.vendor, info.architecture, info.device, info.description]
    .filter((part) => part).join(" · ") || "an unnamed adapter";
  return { adapter, device, name, timestamps: features.length > 0 };
}

function wordBytes(nbytes) {
  return Math.max(4, Math.ceil(nbytes / 4) * 4);
}

const DTYPE_BYTES = { bool: 1, int8: 1, uint8: 1, int16: 2, uint16: 2, float16: 2, int32: 4,
                      uint32: 4, float32: 4 };

async function compileKernels(gpu, kernels) {
  const device = gpu.device;
  device.pushErrorScope("validation");
  const compiled = [];
  for (const kernel of kernels) {
    const module = device.createShaderModule({ code: kernel.source });
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((message) => message.type === "error");
    if (errors.length) {
      await device.popErrorScope();
      throw new Error(`WGSL of ${kernel.name} rejected: ` +
        errors.map((e) => `line ${e.lineNum}: ${e.message}`).join("; "));
    }
    const layout = device.createBindGroupLayout({ entries: kernel.bindings.map((b) => ({
      binding: b.binding, visibility: GPUShaderStage.COMPUTE,
      buffer: { type: b.writable ? "storage" : "read-only-storage" } })) });
    const pipeline = device.createComputePipeline({
      layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module, entryPoint: kernel.name } });
    compiled.push({ kernel, layout, pipeline });
  }
  const error = await device.popErrorScope();
  if (error) throw new Error(`WebGPU refused a kernel: ${error.message}`);
  return compiled;
}

function makeBuffer(gpu, nbytes, data) {
  const buffer = gpu.device.createBuffer({ size: wordBytes(nbytes), usage: GPUBufferUsage.STORAGE |
    GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  if (data) writeBuffer(gpu, buffer, data);
  return buffer;
}

function writeBuffer(gpu, buffer, data) {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const padded = new Uint8Array(wordBytes(bytes.length));
  padded.set(bytes);
  gpu.device.queue.writeBuffer(buffer, 0, padded);
}

// launches: [{compiled, buffers: [GPUBuffer per binding index]}], run in order in one submit.
// Returns {seconds, timer: "GPU timestamps" | "wall clock"}.
async function dispatchAll(gpu, launches) {
  const device = gpu.device;
  const encoder = device.createCommandEncoder();
  const queries = gpu.timestamps ? device.createQuerySet({ type: "timestamp", count: 2 }) : null;
  launches.forEach((launch, i) => {
    const writes = {};
    if (queries && i === 0) writes.beginningOfPassWriteIndex = 0;
    if (queries && i === launches.length - 1) writes.endOfPassWriteIndex = 1;
    const descriptor = Object.keys(writes).length ? { timestampWrites: { querySet: queries, ...writes } } : {};
    const pass = encoder.beginComputePass(descriptor);
    pass.setPipeline(launch.compiled.pipeline);
    pass.setBindGroup(0, device.createBindGroup({ layout: launch.compiled.layout,
      entries: launch.compiled.kernel.bindings.map((b) => ({
        binding: b.binding, resource: { buffer: launch.buffers[b.binding] } })) }));
    pass.dispatchWorkgroups(...launch.compiled.kernel.dispatch);
    pass.end();
  });
  let stamps = null;
  if (queries) {
    const resolved = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE |
      GPUBufferUsage.COPY_SRC });
    stamps = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ |
      GPUBufferUsage.COPY_DST });
    encoder.resolveQuerySet(queries, 0, 2, resolved, 0);
    encoder.copyBufferToBuffer(resolved, 0, stamps, 0, 16);
  }
  const started = performance.now();
  device.queue.submit([encoder.finish()]);
  await device.queue.onSubmittedWorkDone();
  const wall = (performance.now() - started) / 1000;
  if (stamps) {
    await stamps.mapAsync(GPUMapMode.READ);
    const [begin, end] = new BigUint64Array(stamps.getMappedRange().slice(0));
    stamps.unmap();
    if (end > begin) return { seconds: Number(end - begin) * 1e-9, timer: "GPU timestamps" };
  }
  return { seconds: wall, timer: "wall clock" };
}

async function readBuffer(gpu, buffer, nbytes) {
  const device = gpu.device;
  const staging = device.createBuffer({ size: wordBytes(nbytes), usage: GPUBufferUsage.MAP_READ |
    GPUBufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, 0, staging, 0, wordBytes(nbytes));
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const bytes = new Uint8Array(staging.getMappedRange().slice(0, nbytes));
  staging.unmap();
  staging.destroy();
  return bytes;
}

function halfToFloat(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

// bytes of `dtype` elements as plain numbers
function decodeValues(bytes, dtype) {
  const copy = bytes.slice().buffer;
  switch (dtype) {
    case "float32": return Array.from(new Float32Array(copy));
    case "int32": return Array.from(new Int32Array(copy));
    case "uint32": return Array.from(new Uint32Array(copy));
    case "int16": return Array.from(new Int16Array(copy));
    case "uint16": return Array.from(new Uint16Array(copy));
    case "float16": return Array.from(new Uint16Array(copy), halfToFloat);
    case "int8": return Array.from(new Int8Array(copy));
    default: return Array.from(new Uint8Array(copy));   // uint8, bool
  }
}

// max abs and rel error of `got` against `expected` (NaN matches NaN; inf matches itself)
function compareValues(got, expected) {
  let maxAbs = 0, maxRel = 0, mismatched = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = got[i], b = expected[i];
    if (Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b)) || a === b) continue;
    const abs = Math.abs(a - b);
    const rel = abs / Math.max(Math.abs(b), 1e-30);
    if (!(abs <= maxAbs)) maxAbs = Number.isNaN(abs) ? Infinity : abs;
    if (!(rel <= maxRel)) maxRel = Number.isNaN(rel) ? Infinity : rel;
    mismatched += 1;
  }
  return { maxAbs, maxRel, mismatched, count: expected.length };
}
