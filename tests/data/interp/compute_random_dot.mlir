// Randomized dot_general cases (dimension positions, mixed operand/result integer and float types);
// expected values from an independent Python model of the StableHLO spec.

func.func @d0() {
  %l = stablehlo.constant dense<[[[[-543, 783, 846], [-354, -267, 654]], [[-467, -262, 647], [295, 293, 57]]]]> : tensor<1x2x2x3xi32>
  %r = stablehlo.constant dense<[[[[-694, -671, 129]]], [[[362, 359, -437]]]]> : tensor<2x1x1x3xi32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [0, 2] x [2, 0] : (tensor<1x2x2x3xi32>, tensor<2x1x1x3xi32>) -> tensor<2x3x1x3xi32>
  check.expect_eq_const %o, dense<[[[[248694, 237267, 84651]], [[-640056, -621246, 217686]], [[-350376, -332880, -176664]]], [[[430888, 419262, -189158]], [[287894, 280989, -161839]], [[-428384, -413674, 58554]]]]> : tensor<2x3x1x3xi32>
  func.return
}

// -----

func.func @d1() {
  %l = stablehlo.constant dense<[[-830, -439, -582]]> : tensor<1x3xi64>
  %r = stablehlo.constant dense<749> : tensor<i64>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [] x [] : (tensor<1x3xi64>, tensor<i64>) -> tensor<1x3xi64>
  check.expect_eq_const %o, dense<[[-621670, -328811, -435918]]> : tensor<1x3xi64>
  func.return
}

// -----

func.func @d2() {
  %l = stablehlo.constant dense<[[[[376.0, -604.0, -446.0]], [[-74.0, 278.0, -554.0]], [[-8.0, 634.0, -424.0]]], [[[24.0, -479.0, -791.0]], [[-752.0, 675.0, -817.0]], [[-430.0, -426.0, -758.0]]], [[[-943.0, -669.0, 516.0]], [[-157.0, -767.0, 405.0]], [[76.0, 200.0, -810.0]]]]> : tensor<3x3x1x3xf64>
  %r = stablehlo.constant dense<[[[-130.0, -17.0, 994.0], [403.0, -656.0, 95.0], [-209.0, -68.0, -367.0]], [[-7.0, -59.0, -105.0], [-145.0, 219.0, 693.0], [-806.0, -475.0, -29.0]], [[-193.0, -517.0, -80.0], [772.0, 260.0, 923.0], [1.0, -864.0, 165.0]]]> : tensor<3x3x3xf64>
  %o = stablehlo.dot_general %l, %r, batching_dims = [1] x [0], contracting_dims = [3] x [1] : (tensor<3x3x1x3xf64>, tensor<3x3x3xf64>) -> tensor<3x3x1x3xf64>
  check.expect_eq_const %o, dense<[[[[-199078.0, 420160.0, 480046.0]], [[-30838.0, 367604.0, 268648.0]], [[-254861.0, 419807.0, -1190269.0]]], [[[406732.0, 328398.0, 216490.0]], [[565891.0, 580268.0, 570428.0]], [[-214116.0, -351085.0, -526791.0]]], [[[490568.0, 535312.0, 515862.0]], [[-246640.0, 766462.0, -483868.0]], [[138922.0, 712548.0, 44870.0]]]]> : tensor<3x3x1x3xf64>
  func.return
}

// -----

func.func @d3() {
  %l = stablehlo.constant dense<[[[-461.0], [-272.0]], [[-381.0], [85.0]], [[-614.0], [-913.0]]]> : tensor<3x2x1xf32>
  %r = stablehlo.constant dense<[[286.0, 146.0]]> : tensor<1x2xf32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [2] x [0] : (tensor<3x2x1xf32>, tensor<1x2xf32>) -> tensor<3x2x2xf64>
  check.expect_eq_const %o, dense<[[[-131846.0, -67306.0], [-77792.0, -39712.0]], [[-108966.0, -55626.0], [24310.0, 12410.0]], [[-175604.0, -89644.0], [-261118.0, -133298.0]]]> : tensor<3x2x2xf64>
  func.return
}

// -----

func.func @d4() {
  %l = stablehlo.constant dense<[[917.0], [647.0]]> : tensor<2x1xf64>
  %r = stablehlo.constant dense<[[[-267.0], [-485.0]]]> : tensor<1x2x1xf64>
  %o = stablehlo.dot_general %l, %r, batching_dims = [1] x [0], contracting_dims = [0] x [1] : (tensor<2x1xf64>, tensor<1x2x1xf64>) -> tensor<1x1xf64>
  check.expect_eq_const %o, dense<[[-558634.0]]> : tensor<1x1xf64>
  func.return
}

// -----

func.func @d5() {
  %l = stablehlo.constant dense<-529> : tensor<i64>
  %r = stablehlo.constant dense<-488> : tensor<i64>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [] x [] : (tensor<i64>, tensor<i64>) -> tensor<i64>
  check.expect_eq_const %o, dense<258152> : tensor<i64>
  func.return
}

// -----

func.func @d6() {
  %l = stablehlo.constant dense<[[[320.0, 723.0, -596.0], [-250.0, 4.0, -214.0]]]> : tensor<1x2x3xf64>
  %r = stablehlo.constant dense<[[[-499.0, 966.0, -206.0]], [[118.0, 133.0, 584.0]]]> : tensor<2x1x3xf64>
  %o = stablehlo.dot_general %l, %r, batching_dims = [0, 2] x [1, 2], contracting_dims = [1] x [0] : (tensor<1x2x3xf64>, tensor<2x1x3xf64>) -> tensor<1x3xf64>
  check.expect_eq_const %o, dense<[[-189180.0, 698950.0, -2200.0]]> : tensor<1x3xf64>
  func.return
}

// -----

func.func @d7() {
  %l = stablehlo.constant dense<[[[[-101, -56]], [[-20, 4]]], [[[121, 101]], [[-64, 66]]]]> : tensor<2x2x1x2xi8>
  %r = stablehlo.constant dense<[[-102], [-74]]> : tensor<2x1xi8>
  %o = stablehlo.dot_general %l, %r, batching_dims = [2] x [1], contracting_dims = [3] x [0] : (tensor<2x2x1x2xi8>, tensor<2x1xi8>) -> tensor<1x2x2xi32>
  check.expect_eq_const %o, dense<[[[14446, 1744], [-19816, 1644]]]> : tensor<1x2x2xi32>
  func.return
}

// -----

func.func @d8() {
  %l = stablehlo.constant dense<[[[[-456.0, 964.0]], [[-38.0, -340.0]]], [[[911.0, -843.0]], [[769.0, -252.0]]], [[[-874.0, 392.0]], [[314.0, 913.0]]]]> : tensor<3x2x1x2xf32>
  %r = stablehlo.constant dense<[[[[[326.0], [110.0]]], [[[685.0], [-802.0]]]]]> : tensor<1x2x1x2x1xf32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [1] x [3], contracting_dims = [3, 2] x [1, 4] : (tensor<3x2x1x2xf32>, tensor<1x2x1x2x1xf32>) -> tensor<2x3x1x1xf64>
  check.expect_eq_const %o, dense<[[[[511684.0]], [[-280469.0]], [[-16404.0]]], [[[268500.0]], [[286694.0]], [[-697686.0]]]]> : tensor<2x3x1x1xf64>
  func.return
}

// -----

func.func @d9() {
  %l = stablehlo.constant dense<[-1000]> : tensor<1xi64>
  %r = stablehlo.constant dense<[625]> : tensor<1xi64>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [0] x [0] : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  check.expect_eq_const %o, dense<-625000> : tensor<i64>
  func.return
}

// -----

func.func @d10() {
  %l = stablehlo.constant dense<[[[-834, 989, -445], [-492, -423, 394]], [[215, 322, 40], [-999, 123, 631]]]> : tensor<2x2x3xi32>
  %r = stablehlo.constant dense<[[[-518, 484], [-985, 901]], [[-267, 845], [-772, 751]], [[-748, -186], [-217, -88]]]> : tensor<3x2x2xi32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [0, 2] x [1, 0], contracting_dims = [1] x [2] : (tensor<2x2x3xi32>, tensor<3x2x2xi32>) -> tensor<2x3xi32>
  check.expect_eq_const %o, dense<[[193884, -621498, 259576], [-1111874, -156211, -64208]]> : tensor<2x3xi32>
  func.return
}

// -----

func.func @d11() {
  %l = stablehlo.constant dense<[[[[-304.0, 181.0], [-213.0, 626.0], [231.0, -135.0]], [[-488.0, 393.0], [563.0, 982.0], [999.0, -143.0]], [[989.0, -592.0], [601.0, -938.0], [-229.0, 764.0]]]]> : tensor<1x3x3x2xf32>
  %r = stablehlo.constant dense<[[[465.0, -26.0]], [[-500.0, -206.0]]]> : tensor<2x1x2xf32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [0] x [1], contracting_dims = [3] x [2] : (tensor<1x3x3x2xf32>, tensor<2x1x2xf32>) -> tensor<1x3x3x2xf64>
  check.expect_eq_const %o, dense<[[[[-146066.0, 114714.0], [-115321.0, -22456.0], [110925.0, -87690.0]], [[-237138.0, 163042.0], [236263.0, -483792.0], [468253.0, -470042.0]], [[475277.0, -372548.0], [303853.0, -107272.0], [-126349.0, -42884.0]]]]> : tensor<1x3x3x2xf64>
  func.return
}

// -----

func.func @d12() {
  %l = stablehlo.constant dense<[[-815], [-72]]> : tensor<2x1xi16>
  %r = stablehlo.constant dense<[[775], [355]]> : tensor<2x1xi16>
  %o = stablehlo.dot_general %l, %r, batching_dims = [1, 0] x [1, 0], contracting_dims = [] x [] : (tensor<2x1xi16>, tensor<2x1xi16>) -> tensor<1x2xi64>
  check.expect_eq_const %o, dense<[[-631625, -25560]]> : tensor<1x2xi64>
  func.return
}

// -----

func.func @d13() {
  %l = stablehlo.constant dense<[[-540.0, 841.0, 524.0], [-861.0, 280.0, -848.0], [441.0, 470.0, -624.0]]> : tensor<3x3xf32>
  %r = stablehlo.constant dense<[[470.0, -237.0, -57.0], [415.0, -586.0, -213.0], [-781.0, 233.0, -255.0]]> : tensor<3x3xf32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [0, 1] x [0, 1], contracting_dims = [] x [] : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf64>
  check.expect_eq_const %o, dense<[[-253800.0, -199317.0, -29868.0], [-357315.0, -164080.0, 180624.0], [-344421.0, 109510.0, 159120.0]]> : tensor<3x3xf64>
  func.return
}

// -----

func.func @d14() {
  %l = stablehlo.constant dense<[[[12, 115, 28], [-104, -50, -100]], [[-113, 29, 120], [58, 23, 60]]]> : tensor<2x2x3xi8>
  %r = stablehlo.constant dense<[[-39, -61], [-116, -21]]> : tensor<2x2xi8>
  %o = stablehlo.dot_general %l, %r, batching_dims = [1] x [0], contracting_dims = [] x [] : (tensor<2x2x3xi8>, tensor<2x2xi8>) -> tensor<2x2x3x2xi32>
  check.expect_eq_const %o, dense<[[[[-468, -732], [-4485, -7015], [-1092, -1708]], [[4407, 6893], [-1131, -1769], [-4680, -7320]]], [[[12064, 2184], [5800, 1050], [11600, 2100]], [[-6728, -1218], [-2668, -483], [-6960, -1260]]]]> : tensor<2x2x3x2xi32>
  func.return
}

// -----

func.func @d15() {
  %l = stablehlo.constant dense<[[52, 43]]> : tensor<1x2xi8>
  %r = stablehlo.constant dense<[[[[93], [-72], [-121]], [[-108], [28], [11]]], [[[-41], [25], [-27]], [[-26], [-70], [-13]]]]> : tensor<2x2x3x1xi8>
  %o = stablehlo.dot_general %l, %r, batching_dims = [0, 1] x [3, 1], contracting_dims = [] x [] : (tensor<1x2xi8>, tensor<2x2x3x1xi8>) -> tensor<1x2x2x3xi32>
  check.expect_eq_const %o, dense<[[[[4836, -3744, -6292], [-2132, 1300, -1404]], [[-4644, 1204, 473], [-1118, -3010, -559]]]]> : tensor<1x2x2x3xi32>
  func.return
}

// -----

func.func @d16() {
  %l = stablehlo.constant dense<[[[[-87]], [[-61]], [[58]]], [[[116]], [[-68]], [[-87]]]]> : tensor<2x3x1x1xi8>
  %r = stablehlo.constant dense<[[[-82]]]> : tensor<1x1x1xi8>
  %o = stablehlo.dot_general %l, %r, batching_dims = [3] x [0], contracting_dims = [2] x [1] : (tensor<2x3x1x1xi8>, tensor<1x1x1xi8>) -> tensor<1x2x3x1xi32>
  check.expect_eq_const %o, dense<[[[[7134], [5002], [-4756]], [[-9512], [5576], [7134]]]]> : tensor<1x2x3x1xi32>
  func.return
}

// -----

func.func @d17() {
  %l = stablehlo.constant dense<[[[[-441], [-662]]], [[[-69], [-9]]], [[[992], [470]]]]> : tensor<3x1x2x1xi16>
  %r = stablehlo.constant dense<[[[[596], [-798]]], [[[295], [-275]]], [[[-919], [97]]]]> : tensor<3x1x2x1xi16>
  %o = stablehlo.dot_general %l, %r, batching_dims = [3, 1] x [3, 1], contracting_dims = [2, 0] x [2, 0] : (tensor<3x1x2x1xi16>, tensor<3x1x2x1xi16>) -> tensor<1x1xi64>
  check.expect_eq_const %o, dense<[[-618498]]> : tensor<1x1xi64>
  func.return
}

// -----

func.func @d18() {
  %l = stablehlo.constant dense<[[439.0, 602.0, 913.0]]> : tensor<1x3xf64>
  %r = stablehlo.constant dense<[[895.0], [-662.0], [876.0]]> : tensor<3x1xf64>
  %o = stablehlo.dot_general %l, %r, batching_dims = [1] x [0], contracting_dims = [0] x [1] : (tensor<1x3xf64>, tensor<3x1xf64>) -> tensor<3xf64>
  check.expect_eq_const %o, dense<[392905.0, -398524.0, 799788.0]> : tensor<3xf64>
  func.return
}

// -----

func.func @d19() {
  %l = stablehlo.constant dense<[[801.0, 950.0]]> : tensor<1x2xf64>
  %r = stablehlo.constant dense<[[806.0], [436.0]]> : tensor<2x1xf64>
  %o = stablehlo.dot_general %l, %r, batching_dims = [0] x [1], contracting_dims = [1] x [0] : (tensor<1x2xf64>, tensor<2x1xf64>) -> tensor<1xf64>
  check.expect_eq_const %o, dense<[1059806.0]> : tensor<1xf64>
  func.return
}

// -----

func.func @d20() {
  %l = stablehlo.constant dense<[[[-503, 48, 297], [-878, -581, -707]], [[-563, -196, -482], [-770, -521, -532]]]> : tensor<2x2x3xi32>
  %r = stablehlo.constant dense<[[[-980], [-598], [515]], [[378], [350], [583]], [[-365], [-930], [841]]]> : tensor<3x3x1xi32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [2] x [1], contracting_dims = [] x [] : (tensor<2x2x3xi32>, tensor<3x3x1xi32>) -> tensor<3x2x2x3x1xi32>
  check.expect_eq_const %o, dense<[[[[[492940], [-190134], [183595]], [[860440], [-331884], [320470]]], [[[551740], [-212814], [205495]], [[754600], [-291060], [281050]]]], [[[[-28704], [16800], [-44640]], [[347438], [-203350], [540330]]], [[[117208], [-68600], [182280]], [[311558], [-182350], [484530]]]], [[[[152955], [173151], [249777]], [[-364105], [-412181], [-594587]]], [[[-248230], [-281006], [-405362]], [[-273980], [-310156], [-447412]]]]]> : tensor<3x2x2x3x1xi32>
  func.return
}

// -----

func.func @d21() {
  %l = stablehlo.constant dense<[[[140], [249]], [[231], [123]]]> : tensor<2x2x1xui8>
  %r = stablehlo.constant dense<[[[25, 253]], [[77, 232]]]> : tensor<2x1x2xui8>
  %o = stablehlo.dot_general %l, %r, batching_dims = [1] x [0], contracting_dims = [2, 0] x [1, 2] : (tensor<2x2x1xui8>, tensor<2x1x2xui8>) -> tensor<2xui16>
  check.expect_eq_const %o, dense<[61943, 47709]> : tensor<2xui16>
  func.return
}

// -----

func.func @d22() {
  %l = stablehlo.constant dense<[[[[108]], [[-339]], [[713]]], [[[100]], [[-858]], [[640]]]]> : tensor<2x3x1x1xi32>
  %r = stablehlo.constant dense<[[[[342, -971, -298], [-870, -495, -670], [963, -614, -102]], [[-486, -91, 13], [919, 455, -208], [558, -213, -993]]]]> : tensor<1x2x3x3xi32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [2, 1] x [0, 3] : (tensor<2x3x1x1xi32>, tensor<1x2x3x3xi32>) -> tensor<2x1x2x3xi32>
  check.expect_eq_const %o, dense<[[[[153631, -403865, 239424], [-12370, -203297, -575538]]], [[[676598, -91090, 557832], [37798, -431610, -396966]]]]> : tensor<2x1x2x3xi32>
  func.return
}

// -----

func.func @d23() {
  %l = stablehlo.constant dense<[[[761.0], [162.0], [-31.0]]]> : tensor<1x3x1xf32>
  %r = stablehlo.constant dense<[[[[[445.0, 532.0, -457.0], [-207.0, -426.0, -252.0], [-621.0, -964.0, -741.0]], [[495.0, -407.0, -751.0], [11.0, 669.0, 486.0], [900.0, 703.0, 329.0]], [[934.0, -4.0, 358.0], [-888.0, -524.0, -36.0], [902.0, -954.0, -889.0]]]]]> : tensor<1x1x3x3x3xf32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [0] x [0], contracting_dims = [1, 2] x [2, 1] : (tensor<1x3x1xf32>, tensor<1x1x3x3x3xf32>) -> tensor<1x3x3xf64>
  check.expect_eq_const %o, dense<[[[389881.0, 339042.0, -480537.0], [-128217.0, -199564.0, -111924.0], [-354743.0, -590144.0, -483044.0]]]> : tensor<1x3x3xf64>
  func.return
}

// -----

func.func @d24() {
  %l = stablehlo.constant dense<[[[-739, 905], [709, -919], [-329, -334]]]> : tensor<1x3x2xi32>
  %r = stablehlo.constant dense<[-869, 40, 979]> : tensor<3xi32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<1x3x2xi32>, tensor<3xi32>) -> tensor<1x2xi32>
  check.expect_eq_const %o, dense<[[348460, -1150191]]> : tensor<1x2xi32>
  func.return
}

// -----

func.func @d25() {
  %l = stablehlo.constant dense<-545> : tensor<i16>
  %r = stablehlo.constant dense<[[149, -164, -696]]> : tensor<1x3xi16>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [] x [] : (tensor<i16>, tensor<1x3xi16>) -> tensor<1x3xi64>
  check.expect_eq_const %o, dense<[[-81205, 89380, 379320]]> : tensor<1x3xi64>
  func.return
}

// -----

func.func @d26() {
  %l = stablehlo.constant dense<[[846, 746], [-893, -949], [973, -807]]> : tensor<3x2xi64>
  %r = stablehlo.constant dense<[[[459, -122, -607], [271, 221, -972]], [[649, 310, -743], [-790, -384, -338]]]> : tensor<2x2x3xi64>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [1] x [0] : (tensor<3x2xi64>, tensor<2x2x3xi64>) -> tensor<3x2x3xi64>
  check.expect_eq_const %o, dense<[[[872468, 128048, -1067800], [-360074, -99498, -1074460]], [[-1025788, -185244, 1247158], [507707, 167063, 1188758]], [[-77136, -368876, 8990], [901213, 524921, -672990]]]> : tensor<3x2x3xi64>
  func.return
}

// -----

func.func @d27() {
  %l = stablehlo.constant dense<[[971, -441]]> : tensor<1x2xi32>
  %r = stablehlo.constant dense<[[672, 934], [983, -28], [-151, -604]]> : tensor<3x2xi32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [] x [] : (tensor<1x2xi32>, tensor<3x2xi32>) -> tensor<1x2x3x2xi32>
  check.expect_eq_const %o, dense<[[[[652512, 906914], [954493, -27188], [-146621, -586484]], [[-296352, -411894], [-433503, 12348], [66591, 266364]]]]> : tensor<1x2x3x2xi32>
  func.return
}

// -----

func.func @d28() {
  %l = stablehlo.constant dense<[[[[[-36], [92], [33]], [[17], [89], [47]]], [[[-128], [-103], [54]], [[-109], [-2], [-114]]], [[[-120], [-97], [40]], [[-90], [-45], [43]]]], [[[[120], [67], [67]], [[-62], [41], [75]]], [[[-30], [-66], [-61]], [[65], [76], [-28]]], [[[25], [-65], [54]], [[-94], [30], [9]]]]]> : tensor<2x3x2x3x1xi8>
  %r = stablehlo.constant dense<[[[18, 100, -3], [-107, 100, -72]], [[71, -69, 65], [71, 42, -68]], [[42, -84, 22], [-13, 31, -18]]]> : tensor<3x2x3xi8>
  %o = stablehlo.dot_general %l, %r, batching_dims = [3] x [0], contracting_dims = [1, 2] x [2, 1] : (tensor<2x3x2x3x1xi8>, tensor<3x2x3xi8>) -> tensor<3x2x1xi32>
  check.expect_eq_const %o, dense<[[[-19327], [18987]], [[16629], [9149]], [[-7189], [7121]]]> : tensor<3x2x1xi32>
  func.return
}

// -----

func.func @d29() {
  %l = stablehlo.constant dense<[[149, 961]]> : tensor<1x2xi32>
  %r = stablehlo.constant dense<[[[680, 893]], [[408, -372]], [[-476, 378]]]> : tensor<3x1x2xi32>
  %o = stablehlo.dot_general %l, %r, batching_dims = [] x [], contracting_dims = [0] x [1] : (tensor<1x2xi32>, tensor<3x1x2xi32>) -> tensor<2x3x2xi32>
  check.expect_eq_const %o, dense<[[[101320, 133057], [60792, -55428], [-70924, 56322]], [[653480, 858173], [392088, -357492], [-457436, 363258]]]> : tensor<2x3x2xi32>
  func.return
}
