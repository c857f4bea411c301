// A minimal ONNX graph builder: named nodes, initializers and constants, then a ModelJson.
import type {
  AttributeJson,
  ModelJson,
  NodeJson,
  TensorJson,
  ValueInfoJson,
} from './onnx-proto.ts';
import { AttributeType, DataType } from './onnx-proto.ts';

export type Attr = { int: number } | { float: number } | { ints: number[] };

function attribute(name: string, value: Attr): AttributeJson {
  if ('int' in value) return { name, type: AttributeType.INT, i: value.int };
  if ('float' in value) return { name, type: AttributeType.FLOAT, f: value.float };
  return { name, type: AttributeType.INTS, ints: value.ints };
}

function floatTensor(name: string, dims: number[], data: Float32Array): TensorJson {
  const rawData = new Uint8Array(data.byteLength);
  rawData.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return { name, dims, dataType: DataType.FLOAT, rawData };
}

function int64Tensor(name: string, dims: number[], values: readonly number[]): TensorJson {
  const data = BigInt64Array.from(values, (v) => BigInt(v));
  return { name, dims, dataType: DataType.INT64, rawData: new Uint8Array(data.buffer) };
}

export class GraphBuilder {
  private readonly nodes: NodeJson[] = [];
  private readonly initializers: TensorJson[] = [];
  private readonly inputs: ValueInfoJson[] = [];
  private readonly names = new Set<string>();
  private counter = 0;

  private fresh(hint: string): string {
    let name = hint;
    while (this.names.has(name)) name = `${hint}_${++this.counter}`;
    this.names.add(name);
    return name;
  }

  /** Declares a graph input; returns its name. */
  input(info: ValueInfoJson): string {
    if (this.names.has(info.name)) throw new Error(`duplicate graph name ${info.name}`);
    this.names.add(info.name);
    this.inputs.push(info);
    return info.name;
  }

  /** A float initializer (weights); returns its name. */
  weight(name: string, dims: number[], data: Float32Array): string {
    const expected = dims.reduce((a, b) => a * b, 1);
    if (data.length !== expected)
      throw new RangeError(`initializer ${name}: ${data.length} values for ${dims}`);
    const unique = this.fresh(name);
    this.initializers.push(floatTensor(unique, dims, data));
    return unique;
  }

  /** An int64 constant (shapes, axes, indices). Scalars: dims []. */
  int64(name: string, values: readonly number[], dims: number[] = [values.length]): string {
    const unique = this.fresh(name);
    this.initializers.push(int64Tensor(unique, dims, values));
    return unique;
  }

  /** A float scalar constant. */
  float(name: string, value: number): string {
    const unique = this.fresh(name);
    this.initializers.push(floatTensor(unique, [], Float32Array.of(value)));
    return unique;
  }

  /** Adds one node; returns its output names. */
  nodeN(
    opType: string,
    inputs: string[],
    outputs: string[],
    attrs: Record<string, Attr> = {},
  ): string[] {
    const output = outputs.map((o) => this.fresh(o));
    this.nodes.push({
      name: this.fresh(`${opType}_${this.nodes.length}`),
      opType,
      input: inputs,
      output,
      attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
    });
    return output;
  }

  /** Adds a single-output node; `output` names it (a graph output must be named exactly). */
  node(
    opType: string,
    inputs: string[],
    attrs: Record<string, Attr> = {},
    output?: string,
  ): string {
    return this.nodeN(opType, inputs, [output ?? opType.toLowerCase()], attrs)[0]!;
  }

  build(name: string, output: ValueInfoJson[], docString: string): ModelJson {
    const input = this.inputs;
    return {
      graph: { name, node: this.nodes, initializer: this.initializers, input, output, docString },
      opsetVersion: 17,
      docString,
    };
  }
}
