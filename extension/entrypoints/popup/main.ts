import '../../src/ui/styles.css';
import { startPopup } from '../../src/ui/popup-main.ts';

startPopup();
