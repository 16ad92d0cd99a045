package apta

import _root_.circt.stage.ChiselStage
import java.nio.file.{Files, Path, Paths}

/** `./mill rtl.run [outdir]`: every variant of rtl/variants.json into <outdir>/<variant>/
  * (CoherenceCore.sv with its submodules, MsgDecoder.sv, params.json with every AptaParams value and
  * derived width; MemoryServer.sv too for variants with "memoryServer": true), <outdir>/mutants/mutants.json (rtl/Mutants.scala), and, for the MsgDecoder test,
  * <outdir>/MsgDecoder.sv and <outdir>/params.json of the default parameters.
  */
object Elaborate extends App {
  val outDir = if (args.nonEmpty) args(0) else "build/rtl"
  val variantsFile = if (args.length > 1) args(1) else "rtl/variants.json"
  // plain Verilog-2005 constructs where firtool has a choice, so yosys 0.23 (rtl/synth/) reads it too
  val firtoolOpts = Array("-disable-all-randomization", "-strip-debug-info",
    "--lowering-options=disallowPackedArrays,disallowLocalVariables")

  // An unchanged file is not rewritten: its mtime stays, so the Verilator builds of the daemon
  // (make-driven) are not redone after every `make rtl`.
  def write(path: Path, text: String): Unit = {
    Files.createDirectories(path.getParent)
    val bytes = text.getBytes("UTF-8")
    if (!Files.exists(path) || !java.util.Arrays.equals(Files.readAllBytes(path), bytes)) Files.write(path, bytes)
  }
  /** gen's SystemVerilog into dir, through a scratch directory, so that unchanged files keep their mtime */
  def emit(gen: => chisel3.RawModule, dir: Path): Unit = {
    val tmp = Files.createTempDirectory("apta-elaborate")
    try {
      ChiselStage.emitSystemVerilogFile(gen, Array("--target-dir", tmp.toString), firtoolOpts)
      Files.walk(tmp).filter(f => Files.isRegularFile(f)).forEach { f =>
        write(dir.resolve(tmp.relativize(f).toString), new String(Files.readAllBytes(f), "UTF-8"))
      }
    } finally {
      Files.walk(tmp).sorted(java.util.Comparator.reverseOrder()).forEach(f => Files.delete(f))
    }
  }
  def jsonValue(v: Any): String = v match {
    case b: Boolean => b.toString
    case s: String => "\"" + s + "\""
    case x => x.toString
  }
  def paramsJson(name: String, p: AptaParams): String =
    ((Seq("variant" -> name) ++ p.allParams ++ Seq("flitBits" -> Messages.flitBits(p),
      "setIndex" -> "obj % dirSets", "mutantWidth" -> (if (p.mutantPort) Mutants.width else 0)))
      .map { case (k, v) => s"""  "$k": ${jsonValue(v)}""" }).mkString("{\n", ",\n", "\n}\n")

  /** AptaParams with the named fields overridden (an unknown name is an error, not ignored) */
  def params(over: Map[String, ujson.Value]): AptaParams = {
    val d = AptaParams()
    val names = d.productElementNames.toSeq
    over.keys.filterNot(names.contains).foreach(k => sys.error(s"$variantsFile: unknown parameter '$k'"))
    val values = names.zip(d.productIterator.toSeq).map { case (n, dv) =>
      over.get(n) match {
        case None => dv.asInstanceOf[AnyRef]
        case Some(v) => dv match {
          case _: Boolean => java.lang.Boolean.valueOf(v.bool)
          case _: Int => java.lang.Integer.valueOf(v.num.toInt)
          case _ => sys.error(s"$variantsFile: parameter '$n' of an unsupported type")
        }
      }
    }
    classOf[AptaParams].getConstructors.head.newInstance(values: _*).asInstanceOf[AptaParams]
  }

  val variants = ujson.read(new String(Files.readAllBytes(Paths.get(variantsFile)), "UTF-8"))("variants").arr
  for (v <- variants) {
    val name = v("name").str
    implicit val p: AptaParams = params(v("params").obj.toMap)
    val dir = Paths.get(outDir, name)
    Files.createDirectories(dir)
    emit(new CoherenceCore, dir)
    emit(new MsgDecoder, dir)
    val ms = v.obj.get("memoryServer").exists(_.bool)
    if (ms) emit(new MemoryServer, dir)
    write(dir.resolve("params.json"), paramsJson(name, p))
    if (name == "default") {
      emit(new MsgDecoder, Paths.get(outDir))
      // the schema's parameters only: tests/rtl/test_msg_decoder.py compares it with messages.json
      write(Paths.get(outDir, "params.json"), ((p.schemaParams :+ ("flitBits" -> Messages.flitBits))
        .map { case (k, x) => s"""  "$k": $x""" }).mkString("{\n", ",\n", "\n}\n"))
    }
    println(s"Elaborate: $name -> $dir (servers ${p.servers}, ${p.dirSets} sets x ${p.dirWays} ways, flit ${Messages.flitBits} bits)")
  }
  write(Paths.get(outDir, "mutants", "mutants.json"), Mutants.json)
  println(s"Elaborate: wrote $outDir/mutants/mutants.json (${Mutants.all.size} mutants)")
}
