package apta

import _root_.circt.stage.ChiselStage

/** `./mill rtl.run [outdir]`: SystemVerilog of the RTL tops into build/rtl/ (default parameters),
  * and build/rtl/params.json with the parameters the message schema knows (tests compare it with
  * rtl/messages.json).
  */
object Elaborate extends App {
  val outDir = if (args.nonEmpty) args(0) else "build/rtl"
  implicit val p: AptaParams = AptaParams()
  java.nio.file.Files.createDirectories(java.nio.file.Paths.get(outDir))
  val firtoolOpts = Array("-disable-all-randomization", "-strip-debug-info")
  ChiselStage.emitSystemVerilogFile(new MsgDecoder, Array("--target-dir", outDir), firtoolOpts)
  val json = (p.schemaParams.map { case (k, v) => s"""  "$k": $v""" } :+ s"""  "flitBits": ${Messages.flitBits}""")
    .mkString("{\n", ",\n", "\n}\n")
  java.nio.file.Files.write(java.nio.file.Paths.get(outDir, "params.json"), json.getBytes("UTF-8"))
  println(s"Elaborate: wrote $outDir/MsgDecoder.sv and $outDir/params.json (flit ${Messages.flitBits} bits)")
}
